// The undo journal: how a listing walk answers every page at the revision it started at. Every write to the fact
// store and the schema store after the engine's first revision mark goes through the helpers below, which record
// how to undo and redo it. To answer at an older revision the engine undoes the writes made since (newest first),
// answers, and redoes them (oldest first), all synchronously, so no other request ever sees the older state. The
// journal keeps at most `limit` writes: past that, the oldest revisions are dropped and a cursor naming one of them
// is too old (410). Writes are recorded one by one, so the memory is bounded by `limit`, never by the data's size.

interface Op {
  undo(): void;
  redo(): void;
  /** A schema write: the compiled schema must be rebuilt after undoing or redoing it. */
  schema?: true;
}

interface Mark {
  revision: number;
  /** ops.length when the revision was marked: the ops after it belong to later revisions. */
  at: number;
}

/** The journal receiving writes now; set by the engine around each of its mutating calls (all synchronous). */
let active: Journal | undefined;

export class Journal {
  private ops: Op[] = [];
  private marks: Mark[] = [];

  constructor(public limit: number) {}

  /** The newest revision marked, or undefined before the first mark. */
  get revision(): number | undefined {
    return this.marks.at(-1)?.revision;
  }

  /** The oldest revision the engine can still answer at. */
  get oldest(): number | undefined {
    return this.marks[0]?.revision;
  }

  /** Runs `write` recording its writes into this journal (when it has a revision mark). */
  record<T>(write: () => T): T {
    const previous = active;
    active = this.marks.length > 0 ? this : undefined;
    try {
      return write();
    } finally {
      active = previous;
    }
  }

  /** The state now is `revision`'s (revisions must not go backwards; an equal one is a no-op). */
  mark(revision: number): void {
    const last = this.marks.at(-1);
    if (last !== undefined && revision <= last.revision) return;
    this.marks.push({ revision, at: this.ops.length });
    this.trim();
  }

  /** Forgets every older revision (after a write that cannot be undone meaningfully, such as an expiry). */
  reset(): void {
    const last = this.marks.at(-1);
    this.ops = [];
    this.marks = last === undefined ? [] : [{ revision: last.revision, at: 0 }];
  }

  push(op: Op): void {
    this.ops.push(op);
  }

  /** Past the limit, drops whole revisions from the front until a quarter of the room is free again. */
  private trim(): void {
    // Marks count too, so that revisions without writes cannot pile up either.
    if (this.ops.length + this.marks.length <= this.limit) return;
    const keep = Math.floor(this.limit * 0.75);
    let first = 0;
    const size = (m: number) => this.ops.length - (this.marks[m] as Mark).at + this.marks.length - m;
    while (first < this.marks.length - 1 && size(first) > keep) first++;
    const cut = (this.marks[first] as Mark).at;
    this.ops = this.ops.slice(cut);
    this.marks = this.marks.slice(first).map((m) => ({ revision: m.revision, at: m.at - cut }));
  }

  /**
   * Runs `answer` on the state of `revision`: undoes the writes since, answers, redoes them. Returns
   * `{ gone: true }` when the revision is older than the journal holds or newer than the engine's, and reports
   * whether schema writes were crossed (the caller recompiles before and after).
   */
  at<T>(
    revision: number,
    answer: () => T,
    schemaCrossed: () => void,
  ): { gone: true } | { gone: false; value: T } {
    const oldest = this.oldest;
    const newest = this.revision;
    if (oldest === undefined || newest === undefined || revision < oldest || revision > newest) {
      return { gone: true };
    }
    let index = this.marks.length - 1;
    while ((this.marks[index] as Mark).revision > revision) index--;
    const from = (this.marks[index] as Mark).at;
    if (from === this.ops.length) return { gone: false, value: answer() };
    let schema = false;
    for (let i = this.ops.length - 1; i >= from; i--) {
      const op = this.ops[i] as Op;
      if (op.schema) schema = true;
      op.undo();
    }
    if (schema) schemaCrossed();
    try {
      return { gone: false, value: answer() };
    } finally {
      for (let i = from; i < this.ops.length; i++) (this.ops[i] as Op).redo();
      if (schema) schemaCrossed();
    }
  }
}

// ---- the recorded writes (each does the write, and records it when a journal is active) ----

/** `array[index] = value` */
export function setSlot<T>(array: T[], index: number, value: T): void {
  const journal = active;
  if (journal !== undefined) {
    const before = array[index] as T;
    if (before === value) return;
    journal.push({ undo: () => void (array[index] = before), redo: () => void (array[index] = value) });
  }
  array[index] = value;
}

/** `holder[field][index] = value` for a typed array that `holder` may replace by a larger copy. */
export function setTypedSlot<F extends string>(
  holder: Record<F, Int32Array>,
  field: F,
  index: number,
  value: number,
): void {
  const journal = active;
  if (journal !== undefined) {
    const before = holder[field][index] as number;
    if (before === value) return;
    journal.push({
      undo: () => void (holder[field][index] = before),
      redo: () => void (holder[field][index] = value),
    });
  }
  holder[field][index] = value;
}

/** `list.push(...values)` */
export function pushValues(list: number[], ...values: number[]): void {
  list.push(...values);
  const journal = active;
  if (journal === undefined) return;
  const length = list.length - values.length;
  journal.push({ undo: () => void (list.length = length), redo: () => void list.push(...values) });
}

/** `list.length = length` (shorter) */
export function truncate(list: number[], length: number): void {
  const journal = active;
  if (journal !== undefined && length < list.length) {
    const removed = list.slice(length);
    journal.push({ undo: () => void list.push(...removed), redo: () => void (list.length = length) });
  }
  list.length = length;
}

/** `set.add(value)` or `set.delete(value)` */
export function setMember<T>(set: Set<T>, value: T, member: boolean): void {
  if (set.has(value) === member) return;
  const add = () => void set.add(value);
  const remove = () => void set.delete(value);
  if (member) add();
  else remove();
  active?.push(member ? { undo: remove, redo: add } : { undo: add, redo: remove });
}

/** `map.set(key, value)`, or `map.delete(key)` when value is undefined; schema maps only. */
export function setEntry<K, V>(map: Map<K, V>, key: K, value: V | undefined): void {
  const had = map.has(key);
  const before = map.get(key);
  const put = (v: V | undefined, present: boolean) => (present ? map.set(key, v as V) : map.delete(key));
  put(value, value !== undefined);
  active?.push({
    undo: () => void put(before, had),
    redo: () => void put(value, value !== undefined),
    schema: true,
  });
}
