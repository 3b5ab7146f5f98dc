import { randomUUID } from "node:crypto";

export const newId = (): string => randomUUID();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

/** Every path segment that names an object accepts its UUID or its key. */
export const idOrKey = (ref: string): { column: "id" | "key"; value: string } =>
  isUuid(ref) ? { column: "id", value: ref.toLowerCase() } : { column: "key", value: ref };
