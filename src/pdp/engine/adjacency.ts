// Adjacency lists are flat arrays of small integers holding fixed-size records ("stride" numbers per record), e.g.
// [subject, relation, tenant, subject, relation, tenant, ...]. One array per node instead of one object per fact is
// what keeps a fact small. V8 grows an array by 1.5x + 16 slots on push, which would waste ~130 bytes on every node
// holding a single record, so short lists are reallocated at their exact size and only long lists use push.

import { pushValues, setSlot, truncate } from "./journal.ts";

export type AdjacencyList = number[];

const EXACT_SIZE_LIMIT = 48;

function grown(list: AdjacencyList, stride: number): AdjacencyList {
  const length = list.length;
  const next: AdjacencyList = new Array<number>(length + stride);
  for (let i = 0; i < length; i++) next[i] = list[i] as number;
  return next;
}

/** Appends the record (a, b) and returns the list to store (a new array while the list is short). */
export function appendPair(list: AdjacencyList | undefined, a: number, b: number): AdjacencyList {
  if (list === undefined) return [a, b];
  if (list.length >= EXACT_SIZE_LIMIT) {
    pushValues(list, a, b);
    return list;
  }
  const length = list.length;
  const next = grown(list, 2);
  next[length] = a;
  next[length + 1] = b;
  return next;
}

/** Appends the record (a, b, c) and returns the list to store (a new array while the list is short). */
export function appendTriple(
  list: AdjacencyList | undefined,
  a: number,
  b: number,
  c: number,
): AdjacencyList {
  if (list === undefined) return [a, b, c];
  if (list.length >= EXACT_SIZE_LIMIT) {
    pushValues(list, a, b, c);
    return list;
  }
  const length = list.length;
  const next = grown(list, 3);
  next[length] = a;
  next[length + 1] = b;
  next[length + 2] = c;
  return next;
}

/** Index of the first record whose first two fields are (a, b), or -1. */
export function findRecord(list: AdjacencyList | undefined, stride: number, a: number, b: number): number {
  if (list === undefined) return -1;
  for (let i = 0; i < list.length; i += stride) {
    if (list[i] === a && list[i + 1] === b) return i;
  }
  return -1;
}

/**
 * Removes the record at `index` by moving the last record into its place (record order carries no meaning).
 * Returns the list to store, or undefined once it is empty so that a node without records costs nothing.
 */
export function removeRecordAt(
  list: AdjacencyList,
  stride: number,
  index: number,
): AdjacencyList | undefined {
  const last = list.length - stride;
  if (last === 0) return undefined;
  for (let k = 0; k < stride; k++) setSlot(list, index + k, list[last + k] as number);
  truncate(list, last);
  return list;
}

/** Removes every record for which `matches(list, index)` holds; returns the list to store. */
export function removeRecordsWhere(
  list: AdjacencyList | undefined,
  stride: number,
  matches: (list: AdjacencyList, index: number) => boolean,
): AdjacencyList | undefined {
  let current = list;
  // Walking backwards keeps indexes valid: removeRecordAt only moves an already visited record into the hole.
  for (let i = (list?.length ?? 0) - stride; current !== undefined && i >= 0; i -= stride) {
    if (matches(current, i)) current = removeRecordAt(current, stride, i);
  }
  return current;
}
