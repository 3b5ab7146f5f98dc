import { randomUUID } from "node:crypto";

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
  // The random part comes from randomUUID (pooled entropy: far cheaper than randomBytes per id); its first 16 hex
  // digits are replaced by the timestamp, the version and the sequence.
  const random = randomUUID();
  const time = ms.toString(16).padStart(12, "0");
  const seq = sequence.toString(16).padStart(3, "0");
  const variant = ((parseInt(random[19] ?? "8", 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${seq}-${variant}${random.slice(20)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

/** Every path segment that names an object accepts its UUID or its key. */
export const idOrKey = (ref: string): { column: "id" | "key"; value: string } =>
  isUuid(ref) ? { column: "id", value: ref.toLowerCase() } : { column: "key", value: ref };
