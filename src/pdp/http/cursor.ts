// Listing cursors (docs/data-filtering.md): opaque to the caller, they carry the walk's revision, its position
// (an id) and a digest of the rest of the request, which must stay the same from page to page. A cursor whose
// revision the PDP no longer holds is answered with 410 CURSOR_EXPIRED.

import { createHash } from "node:crypto";
import { AppError } from "../../lib/errors.ts";
import type { ListAnswer, ListCursor } from "../engine/index.ts";

type Loc = (string | number)[];

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** JSON with sorted keys, so that a digest recognises the same request whatever its key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** 16 characters naming the request (without its paging fields). */
export function requestDigest(rest: unknown): string {
  return createHash("sha256").update(canonical(rest)).digest("base64url").slice(0, 16);
}

export function encodeCursor(cursor: ListCursor, digest: string): string {
  return Buffer.from(`w1.${cursor.revision}.${cursor.after}.${cursor.scan ? 1 : 0}.${digest}`).toString(
    "base64url",
  );
}

/**
 * The cursor in `token`, checked against the request's digest. `invalid` builds the route's error for a token
 * that is not one (422 on Gatehouse's routes, 400 on AuthZEN's).
 */
export function decodeCursor(
  token: unknown,
  digest: string,
  loc: Loc,
  invalid: (message: string, loc: Loc) => AppError,
): ListCursor {
  const decoded = typeof token === "string" ? Buffer.from(token, "base64url").toString("utf8") : "";
  const match = /^w1\.(\d{1,15})\.(-1|\d{1,15})\.([01])\.([A-Za-z0-9_-]{16})$/.exec(decoded);
  if (match === null) throw invalid("the cursor is not one this PDP issued", loc);
  if (match[4] !== digest) {
    throw invalid("the cursor belongs to another request: only the cursor may change between pages", loc);
  }
  return { revision: Number(match[1]), after: Number(match[2]), scan: match[3] === "1" };
}

/** The page, or 410 when its revision is gone. */
export function pageOrGone<T>(answer: ListAnswer<T>): Exclude<ListAnswer<T>, { gone: true }> {
  if (answer.gone) {
    throw new AppError(
      "CURSOR_EXPIRED",
      "the walk's revision is no longer held by this PDP (too many writes since, a restart, or an assignment's expiry): start the walk again without a cursor",
    );
  }
  return answer;
}
