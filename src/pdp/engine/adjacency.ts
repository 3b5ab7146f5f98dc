// Adjacency lists: per node, a list of fixed-size integer records ("stride" numbers per record), e.g.
// [subject, relation, tenant, subject, relation, tenant, ...]. Every node's list is a block of one shared Int32Array
// pool, found by two per-node integers (where the block starts, how many slots it uses), so a record costs its
// stride × 4 bytes and a node 8 bytes: no array object per node (a JS array of one triple costs 72 bytes) and
// nothing for the garbage collector to trace.
//
// A block's capacity is its record count rounded up to a power of two, so it need not be stored. A block that is
// full moves to the end of the pool at twice the size and leaves a hole; holes are counted and the pool is
// compacted when they pass half of it, or on `trim()` after a bulk load. Readers take `data` and the node's
// `begin`/`end` at the time of use: any write may replace `data`.

const INITIAL_SLOTS = 1024;

/** Record capacity for `records` records: the next power of two (0 for none). */
function capacityFor(records: number): number {
  return records <= 1 ? records : 2 ** (32 - Math.clz32(records - 1));
}

export class AdjacencyLists {
  data = new Int32Array(INITIAL_SLOTS);
  /** by node: index in `data` of the node's first slot */
  private start = new Int32Array(INITIAL_SLOTS);
  /** by node: slots in use (records × stride) */
  private used = new Int32Array(INITIAL_SLOTS);
  /** first free slot at the end of the pool */
  private top = 0;
  /** slots of `data` below `top` that no node uses */
  private holes = 0;

  constructor(readonly stride: number) {}

  /** First slot of the node's list. */
  begin(node: number): number {
    return node < this.start.length ? (this.start[node] as number) : 0;
  }

  /** One past the last slot of the node's list (begin === end when the list is empty). */
  end(node: number): number {
    return node < this.used.length ? (this.start[node] as number) + (this.used[node] as number) : 0;
  }

  /** Records of the node. */
  count(node: number): number {
    return node < this.used.length ? (this.used[node] as number) / this.stride : 0;
  }

  /** A view of the node's slots, valid until the next write (for code off the check path). */
  slots(node: number): Int32Array {
    return this.data.subarray(this.begin(node), this.end(node));
  }

  /** Slot index of the node's first record whose first two fields are (a, b), or -1. */
  find(node: number, a: number, b: number): number {
    const { data, stride } = this;
    for (let i = this.begin(node), end = this.end(node); i < end; i += stride) {
      if (data[i] === a && data[i + 1] === b) return i;
    }
    return -1;
  }

  /** Appends the record (a, b) or (a, b, c) to the node's list. */
  append(node: number, a: number, b: number, c = 0): void {
    const { stride } = this;
    if (node >= this.start.length) this.growNodes(node + 1);
    const used = this.used[node] as number;
    const records = used / stride;
    let at = this.start[node] as number;
    if (capacityFor(records) === records) {
      // full (or empty): move to a block of twice the records at the end of the pool
      const slots = capacityFor(records + 1) * stride;
      if (this.top + slots > this.data.length) this.makeRoom(slots);
      at = this.start[node] as number; // compaction may have moved it
      const to = this.top;
      const data = this.data;
      for (let k = 0; k < used; k++) data[to + k] = data[at + k] as number;
      this.holes += used;
      this.top += slots;
      this.start[node] = to;
      at = to;
    }
    const data = this.data;
    const slot = at + used;
    data[slot] = a;
    data[slot + 1] = b;
    if (stride === 3) data[slot + 2] = c;
    this.used[node] = used + stride;
  }

  /** Removes the record at slot `index` of the node's list by moving its last record there (order carries no meaning). */
  removeAt(node: number, index: number): void {
    const { data, stride } = this;
    const used = this.used[node] as number;
    const last = (this.start[node] as number) + used - stride;
    for (let k = 0; k < stride; k++) data[index + k] = data[last + k] as number;
    this.used[node] = used - stride;
    this.holes += (capacityFor(used / stride) - capacityFor(used / stride - 1)) * stride;
  }

  /** Removes every record of the node for which `matches(data, slot)` holds. */
  removeWhere(node: number, matches: (data: Int32Array, slot: number) => boolean): void {
    // Walking backwards keeps slots valid: removeAt only moves an already visited record into the hole.
    for (let i = this.end(node) - this.stride; i >= this.begin(node); i -= this.stride) {
      if (matches(this.data, i)) this.removeAt(node, i);
    }
  }

  /** Empties the node's list. */
  clear(node: number): void {
    if (node >= this.used.length) return;
    this.holes += capacityFor((this.used[node] as number) / this.stride) * this.stride;
    this.used[node] = 0;
  }

  /** Compacts the pool to its live blocks plus a little headroom (after a bulk load: what is left is kept). */
  trim(): void {
    const live = this.top - this.holes;
    this.compact(live + Math.max(INITIAL_SLOTS, live >> 4));
  }

  private growNodes(needed: number): void {
    const size = Math.max(needed, this.start.length * 2);
    const start = new Int32Array(size);
    start.set(this.start);
    this.start = start;
    const used = new Int32Array(size);
    used.set(this.used);
    this.used = used;
  }

  private makeRoom(slots: number): void {
    const live = this.top - this.holes;
    if (this.holes > live) this.compact(Math.max(live * 2, live + slots + INITIAL_SLOTS));
    if (this.top + slots > this.data.length) {
      const data = new Int32Array(Math.max(this.top + slots, Math.ceil(this.data.length * 1.5)));
      data.set(this.data.subarray(0, this.top));
      this.data = data;
    }
  }

  /** Copies every node's block, in node order, into a new pool of `size` slots. */
  private compact(size: number): void {
    const { stride } = this;
    const data = new Int32Array(Math.max(size, INITIAL_SLOTS));
    const old = this.data;
    let to = 0;
    for (let node = 0; node < this.used.length; node++) {
      const used = this.used[node] as number;
      if (used === 0) continue;
      const from = this.start[node] as number;
      // a loop, not set(subarray()): most blocks hold one record, and a subarray is an allocation
      for (let k = 0; k < used; k++) data[to + k] = old[from + k] as number;
      this.start[node] = to;
      to += capacityFor(used / stride) * stride;
    }
    this.data = data;
    this.top = to;
    this.holes = 0;
  }
}
