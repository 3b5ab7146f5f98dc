import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { memberOrganizationIds, type MemberRow } from "../../domain/member-records.ts";
import { createSession, csrfTokenOf, type SessionLifetime } from "../../domain/session-records.ts";
import { now } from "../../lib/time.ts";
import type { SessionRead } from "./sessions.schemas.ts";

/** What a session call returns: the session with its CSRF token, and a new token to set as the cookie. */
export interface Opened {
  token: string;
  session: SessionRead;
}

/** Opens sessions (a password login, an accepted invite, the first setup, a single sign-on) and reads them back. */
export function createSessionOpener(db: Kysely<Database>, lifetime: SessionLifetime) {
  async function sessionRead(memberId: string, sessionId: string, token: string): Promise<SessionRead> {
    const session = await db
      .selectFrom("sessions as s")
      .innerJoin("members as m", "m.id", "s.member_id")
      .select(["s.organization_id", "s.expires_at", "m.email"])
      .where("s.id", "=", sessionId)
      .executeTakeFirstOrThrow();
    const ids = await memberOrganizationIds(db, memberId);
    const organizations =
      ids.length === 0
        ? []
        : await db.selectFrom("organizations").select(["id", "key", "name"]).where("id", "in", ids).execute();
    return {
      member_id: memberId,
      email: session.email,
      active_organization_id: session.organization_id,
      organizations: ids.map((id) => organizations.find((o) => o.id === id)!).filter(Boolean),
      csrf_token: csrfTokenOf(token),
      expires_at: session.expires_at,
    };
  }

  /** A new session of the member, in the organization given or its first one. */
  async function open(
    member: MemberRow,
    ip: string,
    organizationId?: string,
    method: "password" | "sso" = "password",
  ): Promise<Opened> {
    const active = organizationId ?? (await memberOrganizationIds(db, member.id))[0] ?? null;
    const created = await createSession(db, member.id, active, lifetime, Date.now(), method);
    await db
      .updateTable("members")
      .set((eb) => ({ last_login: now(), last_ip: ip, logins_count: eb("logins_count", "+", 1) }))
      .where("id", "=", member.id)
      .execute();
    return { token: created.token, session: await sessionRead(member.id, created.id, created.token) };
  }

  return { open, sessionRead };
}
