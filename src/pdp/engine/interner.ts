/**
 * Maps strings to dense integer ids (0, 1, 2, ...) and back. Facts are stored by id so that each key string is held
 * once and the indexes can be plain arrays indexed by id. Ids are never reused: a deleted user keeps its id, which
 * keeps every id-indexed array valid without compaction.
 */
export class Interner {
  private readonly ids = new Map<string, number>();
  readonly keys: string[] = [];

  get size(): number {
    return this.keys.length;
  }

  /** The id of `key`, or undefined. Never allocates, so it is safe on the check path. */
  get(key: string): number | undefined {
    return this.ids.get(key);
  }

  intern(key: string): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.keys.length;
      this.ids.set(key, id);
      this.keys.push(key);
    }
    return id;
  }

  keyOf(id: number): string {
    const key = this.keys[id];
    if (key === undefined) throw new RangeError(`no key interned with id ${id}`);
    return key;
  }
}
