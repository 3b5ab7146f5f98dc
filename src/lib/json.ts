/** JSON columns are stored as text in both dialects. */
export const toJson = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

export function fromJson<T>(text: string | null | undefined): T | null {
  return text === null || text === undefined ? null : (JSON.parse(text) as T);
}

export function fromJsonObject(text: string | null | undefined): Record<string, unknown> {
  return fromJson<Record<string, unknown>>(text) ?? {};
}

/**
 * JSON text already encoded (a hot route's answer built by hand): a server that knows it writes `text` as it is;
 * anything else that stringifies it (`toJSON`) writes the same value.
 */
export class JsonText {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}
