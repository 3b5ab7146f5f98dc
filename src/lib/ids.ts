import { randomBytes } from "node:crypto";

let lastMs = 0;
let sequence = 0;

/**
 * UUIDv7 (RFC 9562): a millisecond timestamp, then a 12-bit sequence that keeps ids made in the same millisecond in
 * order, then random bits. Lists ordered by (created_at, id) therefore keep creation order even when two objects
 * share a timestamp.
 */
export function newId(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    sequence += 1;
    if (sequence > 0xfff) {
      lastMs += 1;
      sequence = 0;
    }
    ms = lastMs;
  } else {
    lastMs = ms;
    sequence = 0;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

/** Every path segment that names an object accepts its UUID or its key. */
export const idOrKey = (ref: string): { column: "id" | "key"; value: string } =>
  isUuid(ref) ? { column: "id", value: ref.toLowerCase() } : { column: "key", value: ref };
