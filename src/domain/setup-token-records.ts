import { randomBytes } from "node:crypto";
import type { Db } from "../db/db.ts";
import { newId } from "../lib/ids.ts";
import { hashSecret } from "../lib/secrets.ts";
import { now, toTimestamp } from "../lib/time.ts";

/** One-time setup links of the first start: whoever holds one creates the owner account, within 24 hours. */

export const SETUP_TOKEN_TTL_MS = 24 * 3_600_000;

export async function createSetupToken(db: Db, at = Date.now()): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  await db
    .insertInto("setup_tokens")
    .values({
      id: newId(),
      token_hash: hashSecret(token),
      created_at: toTimestamp(new Date(at)),
      expires_at: toTimestamp(new Date(at + SETUP_TOKEN_TTL_MS)),
      used_at: null,
    })
    .execute();
  return token;
}

/** Uses a setup token: true once for a known, unexpired token; false for anything else (and ever after). */
export async function redeemSetupToken(db: Db, token: string): Promise<boolean> {
  const at = now();
  const result = await db
    .updateTable("setup_tokens")
    .set({ used_at: at })
    .where("token_hash", "=", hashSecret(token))
    .where("used_at", "is", null)
    .where("expires_at", ">", at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
