import { randomInt } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import type { Db } from "../db/db.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { hashPassword, verifyPassword } from "../lib/passwords.ts";
import { newId } from "../lib/ids.ts";
import { now } from "../lib/time.ts";

/**
 * A member's second factor (issue 43): a TOTP secret (RFC 6238: SHA-1, 6 digits, 30 s, sealed with the secret
 * box) and ten one-time recovery codes (Argon2id, like passwords). A code is accepted once: the time step of the
 * last one accepted is kept, and a recovery code is marked used in the statement that checks it is unused.
 */

const PERIOD = 30;
export const RECOVERY_CODE_COUNT = 10;
/** Letters and digits that are not confused when read aloud or copied by hand. */
const ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";

export const totpOf = (secretBase32: string, label: string): TOTP =>
  new TOTP({
    issuer: "Gatehouse",
    label,
    algorithm: "SHA1",
    digits: 6,
    period: PERIOD,
    secret: Secret.fromBase32(secretBase32),
  });

export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

export const findTotp = (db: Db, memberId: string) =>
  db.selectFrom("member_totp").selectAll().where("member_id", "=", memberId).executeTakeFirst();

/** Whether the member has a confirmed second factor. */
export const hasTwoFactor = async (db: Db, memberId: string): Promise<boolean> =>
  !!(await findTotp(db, memberId))?.confirmed_at;

/** A new, unconfirmed secret for the member (replacing an unconfirmed one). */
export async function startTotpEnrolment(db: Db, box: SecretBox, memberId: string, secret: string) {
  await db.deleteFrom("member_totp").where("member_id", "=", memberId).execute();
  await db
    .insertInto("member_totp")
    .values({
      member_id: memberId,
      secret_sealed: box.seal(secret),
      confirmed_at: null,
      last_step: null,
      created_at: now(),
    })
    .execute();
}

/**
 * Checks a 6-digit code against the member's secret (confirmed or, with `pending`, the one being enrolled), one
 * step either side for clock drift; a step's code is accepted once.
 */
export async function acceptTotpCode(
  db: Db,
  box: SecretBox,
  memberId: string,
  code: string,
  pending = false,
): Promise<boolean> {
  const row = await findTotp(db, memberId);
  if (!row || (row.confirmed_at === null) !== pending) return false;
  const secret = box.open(row.secret_sealed);
  if (!secret || !/^\d{6}$/.test(code)) return false;
  const delta = totpOf(secret, "").validate({ token: code, window: 1 });
  if (delta === null) return false;
  const step = TOTP.counter({ period: PERIOD }) + delta;
  const result = await db
    .updateTable("member_totp")
    .set({ last_step: step, ...(pending && { confirmed_at: now() }) })
    .where("member_id", "=", memberId)
    .where((eb) => eb.or([eb("last_step", "is", null), eb("last_step", "<", step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

const normalizeRecoveryCode = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, "");

/** Ten new recovery codes (`xxxxx-xxxxx`, 49 bits each) replacing the member's; returned once, stored hashed. */
export async function newRecoveryCodes(db: Db, memberId: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
  const hashes = await Promise.all(codes.map((c) => hashPassword(normalizeRecoveryCode(c))));
  await db.deleteFrom("member_recovery_codes").where("member_id", "=", memberId).execute();
  await db
    .insertInto("member_recovery_codes")
    .values(hashes.map((code_hash) => ({ id: newId(), member_id: memberId, code_hash, used_at: null })))
    .execute();
  return codes;
}

/** Uses one of the member's unused recovery codes; false for an unknown or used one. */
export async function useRecoveryCode(db: Db, memberId: string, code: string): Promise<boolean> {
  const given = normalizeRecoveryCode(code);
  if (given.length !== 10) return false;
  const rows = await db
    .selectFrom("member_recovery_codes")
    .select(["id", "code_hash"])
    .where("member_id", "=", memberId)
    .where("used_at", "is", null)
    .execute();
  const matches = await Promise.all(rows.map((r) => verifyPassword(r.code_hash, given)));
  const row = rows[matches.indexOf(true)];
  if (!row) return false;
  const result = await db
    .updateTable("member_recovery_codes")
    .set({ used_at: now() })
    .where("id", "=", row.id)
    .where("used_at", "is", null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function countUnusedRecoveryCodes(db: Db, memberId: string): Promise<number> {
  const row = await db
    .selectFrom("member_recovery_codes")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("member_id", "=", memberId)
    .where("used_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Removes the member's second factor and recovery codes (the member, or an operator's `reset-2fa`). */
export async function deleteTwoFactor(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom("member_recovery_codes").where("member_id", "=", memberId).execute();
  await db.deleteFrom("member_totp").where("member_id", "=", memberId).execute();
}
