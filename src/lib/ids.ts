import { randomFillSync, randomInt } from "node:crypto";

/** The time a UUIDv7 holds, in milliseconds. */
export const timeOfId = (id: string): number => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

const HEX = Buffer.from("0123456789abcdef", "latin1");

/** `value`'s lowest `digits` hex digits, as text into `buf` at `pos`. */
function hex(buf: Buffer, pos: number, value: number, digits: number): void {
  for (let i = pos + digits - 1; i >= pos; i--) {
    buf[i] = HEX[value & 15] as number;
    value >>>= 4;
  }
}

/**
 * Time-ordered UUIDv7 ids (RFC 9562) for things made at `now`, in the order made, written as text straight into
 * bytes: an id allocates nothing (the decision log writes them into its chunks; as strings, made by concatenation,
 * they were the largest share of the garbage a check left behind). Each writer has its own state: a clock that
 * never goes back, and within one millisecond a 26-bit counter from a random start (in `rand_a` and the top of
 * `rand_b`), so ids only grow; the last 48 bits are random, from a pool.
 */
export class UuidV7Writer {
  #ms = -1;
  #seq = 0;
  readonly #pool = new Uint8Array(6 * 512);
  #used = this.#pool.length;

  /** The 36 characters of the next id into `buf` at `pos`. */
  write(now: number, buf: Buffer, pos: number): void {
    if (now > this.#ms) {
      this.#ms = now;
      this.#seq = randomInt(2 ** 25);
    } else if (++this.#seq >= 2 ** 26) {
      this.#ms += 1;
      this.#seq = 0;
    }
    if (this.#used === this.#pool.length) {
      randomFillSync(this.#pool);
      this.#used = 0;
    }
    const ms = this.#ms;
    const seq = this.#seq;
    hex(buf, pos, Math.floor(ms / 0x10000), 8);
    buf[pos + 8] = 0x2d; // -
    hex(buf, pos + 9, ms, 4);
    buf[pos + 13] = 0x2d;
    hex(buf, pos + 14, 0x7000 | (seq >>> 14), 4); // version 7, 12 bits of the counter
    buf[pos + 18] = 0x2d;
    hex(buf, pos + 19, 0x8000 | (seq & 0x3fff), 4); // variant 10, 14 bits of the counter
    buf[pos + 23] = 0x2d;
    for (let i = pos + 24; i < pos + 36; i += 2) hex(buf, i, this.#pool[this.#used++] as number, 2);
  }
}

const ids = new UuidV7Writer();
const idText = Buffer.alloc(36);

/**
 * A new UUIDv7: ids made one after another only grow, so lists ordered by (created_at, id) keep creation order
 * even when two objects share a timestamp.
 */
export function newId(): string {
  ids.write(Date.now(), idText, 0);
  return idText.toString("latin1");
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

/** Every path segment that names an object accepts its UUID or its key. */
export const idOrKey = (ref: string): { column: "id" | "key"; value: string } =>
  isUuid(ref) ? { column: "id", value: ref.toLowerCase() } : { column: "key", value: ref };
