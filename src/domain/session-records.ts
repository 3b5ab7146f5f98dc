import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Kysely } from "kysely";
import type { Db } from "../db/db.ts";
import type { Database } from "../db/types.ts";
import type { MemberIdentity, Principal } from "../lib/access.ts";
import { NO_GRANT } from "../lib/access.ts";
import { newId } from "../lib/ids.ts";
import { hashSecret } from "../lib/secrets.ts";
import { now, toTimestamp } from "../lib/time.ts";
import { grantsOf } from "./member-records.ts";

/**
 * Server-side sessions. The browser holds a random token (256 bits) in an HttpOnly cookie; the database holds its
 * SHA-256 only. A session ends at its idle expiry (renewed as it is used), at its absolute expiry, at logout, at
 * a password change (the member's other sessions) and when the member is removed.
 */

export interface SessionLifetime {
  idleMs: number;
  maxMs: number;
}

/** The CSRF token of a session: derived from its token, so it needs no storage and dies with the session. */
export const csrfTokenOf = (sessionToken: string): string =>
  createHash("sha256").update(`gatehouse-csrf:${sessionToken}`, "utf8").digest("base64url");

export function csrfMatches(sessionToken: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export async function createSession(
  db: Db,
  memberId: string,
  organizationId: string | null,
  lifetime: SessionLifetime,
  at = Date.now(),
  method: "password" | "sso" = "password",
): Promise<{ id: string; token: string; expiresAt: string }> {
  const token = `ghs_${randomBytes(32).toString("base64url")}`;
  const id = newId();
  const expiresAt = toTimestamp(new Date(at + lifetime.maxMs));
  await db
    .insertInto("sessions")
    .values({
      id,
      token_hash: hashSecret(token),
      member_id: memberId,
      organization_id: organizationId,
      created_at: toTimestamp(new Date(at)),
      last_seen_at: toTimestamp(new Date(at)),
      idle_expires_at: toTimestamp(new Date(at + Math.min(lifetime.idleMs, lifetime.maxMs))),
      expires_at: expiresAt,
      auth_method: method,
    })
    .execute();
  return { id, token, expiresAt };
}

/**
 * The idle expiry is pushed forward at most once a minute, so a busy session does not write on every call, and at
 * least every quarter of the idle window, so a session used more often than its window never lapses.
 */
const TOUCH_EVERY_MS = 60_000;
const touchEvery = (lifetime: SessionLifetime) => Math.min(TOUCH_EVERY_MS, lifetime.idleMs / 4);

/**
 * The principal of a session token: the member with its grants in the active organization (none: it may call
 * only its own session's routes). Null for an unknown, ended or expired session.
 */
export async function sessionPrincipal(
  db: Kysely<Database>,
  token: string,
  lifetime: SessionLifetime,
  at = Date.now(),
): Promise<Principal | null> {
  const stamp = toTimestamp(new Date(at));
  const row = await db
    .selectFrom("sessions as s")
    .innerJoin("members as m", "m.id", "s.member_id")
    .leftJoin("org_login_settings as ls", "ls.organization_id", "s.organization_id")
    .leftJoin("member_totp as t", "t.member_id", "s.member_id")
    .select([
      "s.id",
      "s.member_id",
      "s.organization_id",
      "s.last_seen_at",
      "s.expires_at",
      "s.auth_method",
      "m.email",
      "ls.require_sso",
      "ls.require_two_factor",
      "ls.break_glass_member_id",
      "t.confirmed_at as two_factor_confirmed_at",
    ])
    .where("s.token_hash", "=", hashSecret(token))
    .where("s.idle_expires_at", ">", stamp)
    .where("s.expires_at", ">", stamp)
    .executeTakeFirst();
  if (!row) return null;
  if (at - Date.parse(row.last_seen_at) >= touchEvery(lifetime)) {
    const idle = toTimestamp(new Date(Math.min(at + lifetime.idleMs, Date.parse(row.expires_at))));
    await db
      .updateTable("sessions")
      .set({ last_seen_at: stamp, idle_expires_at: idle })
      .where("id", "=", row.id)
      .execute();
  }
  const grants = row.organization_id === null ? [] : await grantsOf(db, row.member_id, row.organization_id);
  const first = grants[0] ?? NO_GRANT;
  return {
    keyId: row.member_id,
    keyName: row.email,
    organizationId: row.organization_id ?? "",
    projectId: first.projectId,
    projectKey: first.projectKey,
    environmentId: first.environmentId,
    environmentKey: first.environmentKey,
    level: first.level,
    access: first.access,
    member: {
      id: row.member_id,
      email: row.email,
      sessionId: row.id,
      grants,
      restricted: restrictionOf(row),
    },
  };
}

/**
 * What a password session may not do in its active organization: anything, where the organization requires SSO
 * (but for its break-glass admin); anything but its own session's routes, where it requires a second factor the
 * member has not enrolled yet. A session opened by SSO answers to its identity provider for both.
 */
function restrictionOf(row: {
  auth_method: string;
  member_id: string;
  require_sso: number | null;
  require_two_factor: number | null;
  break_glass_member_id: string | null;
  two_factor_confirmed_at: string | null;
}): MemberIdentity["restricted"] {
  if (row.auth_method !== "password") return undefined;
  if (row.require_sso === 1 && row.break_glass_member_id !== row.member_id) return "sso";
  if (row.require_two_factor === 1 && row.two_factor_confirmed_at === null) return "two_factor";
  return undefined;
}

export const deleteSession = (db: Db, sessionId: string) =>
  db.deleteFrom("sessions").where("id", "=", sessionId).execute();

/** Ends a member's sessions: all, or those active in one organization, or all but one (a password change). */
export async function deleteMemberSessions(
  db: Db,
  memberId: string,
  only: { organizationId?: string; exceptSessionId?: string } = {},
): Promise<void> {
  let q = db.deleteFrom("sessions").where("member_id", "=", memberId);
  if (only.organizationId !== undefined) q = q.where("organization_id", "=", only.organizationId);
  if (only.exceptSessionId !== undefined) q = q.where("id", "!=", only.exceptSessionId);
  await q.execute();
}

export const setActiveOrganization = (db: Db, sessionId: string, organizationId: string) =>
  db.updateTable("sessions").set({ organization_id: organizationId }).where("id", "=", sessionId).execute();

/** Deletes the sessions past their absolute or idle expiry; returns how many. */
export async function purgeExpiredSessions(db: Db, at = now()): Promise<number> {
  const result = await db
    .deleteFrom("sessions")
    .where((eb) => eb.or([eb("expires_at", "<=", at), eb("idle_expires_at", "<=", at)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
