import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { AppError, notFound } from "../../lib/errors.ts";
import { idOrKey } from "../../lib/ids.ts";
import { assertAcceptablePassword, hashPassword, verifyPassword } from "../../lib/passwords.ts";
import { hashSecret } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { FailureLimiter } from "../../plugins/rate-limit.ts";
import {
  findMemberByEmail,
  findMemberById,
  countMembers,
  firstOrganizationId,
  insertMemberWithGrant,
  lockOrganization,
  memberOrganizationIds,
  normalizeEmail,
  orgAdminGrant,
  putGrant,
  setPasswordHash,
  type MemberRow,
} from "../../domain/member-records.ts";
import {
  createSession,
  csrfTokenOf,
  deleteMemberSessions,
  deleteSession,
  setActiveOrganization,
  type SessionLifetime,
} from "../../domain/session-records.ts";
import { redeemSetupToken } from "../../domain/setup-token-records.ts";
import { findInviteByCodeHash, markInviteUsed } from "../members/members.repo.ts";
import type {
  AcceptInviteBody,
  LoginBody,
  PasswordChange,
  SessionRead,
  SetupBody,
} from "./sessions.schemas.ts";

type Db = Kysely<Database>;
type MemberPrincipal = Principal & { member: NonNullable<Principal["member"]> };

/** What a session call returns: the session with its CSRF token, and a new token to set as the cookie. */
export interface Opened {
  token: string;
  session: SessionRead;
}

const LOGIN_WINDOW_MS = 15 * 60_000;
const wrongCredentials = () => new AppError("INVALID_CREDENTIALS", "the e-mail or password is wrong");

export function createSessionsService(deps: {
  db: Db;
  lifetime: SessionLifetime;
  failures: FailureLimiter;
  limits: { perAccount: number; perAddress: number };
  /** Tells the caller to answer 429 with Retry-After (the rate limiter's headers). */
  onLimited: (retryAfterSeconds: number, limit: number) => void;
}) {
  const { db, lifetime, failures } = deps;

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
  async function open(member: MemberRow, ip: string, organizationId?: string): Promise<Opened> {
    const active = organizationId ?? (await memberOrganizationIds(db, member.id))[0] ?? null;
    const created = await createSession(db, member.id, active, lifetime);
    await db
      .updateTable("members")
      .set((eb) => ({ last_login: now(), last_ip: ip, logins_count: eb("logins_count", "+", 1) }))
      .where("id", "=", member.id)
      .execute();
    return { token: created.token, session: await sessionRead(member.id, created.id, created.token) };
  }

  const tooMany = (wait: number, limit: number, what = "failed logins") => {
    deps.onLimited(wait, limit);
    return new AppError("TOO_MANY_REQUESTS", `too many ${what}; retry in ${wait} s`, {
      retry_after_seconds: wait,
    });
  };

  /**
   * 429 for an address over its failures (with any account), for an account and address pair over the account's
   * limit, and for an account over its limit from an address that has failed on it: so guesses against one
   * account from anywhere lock it for the guessers, but the member's correct password from an address that has
   * not failed on it still logs in.
   */
  async function limited(email: string, ip: string): Promise<void> {
    const { perAccount, perAddress } = deps.limits;
    const [address, pair, account, pairFailed] = await Promise.all([
      failures.retryAfter(`login:address:${ip}`, perAddress, LOGIN_WINDOW_MS),
      failures.retryAfter(`login:pair:${email}|${ip}`, perAccount, LOGIN_WINDOW_MS),
      failures.retryAfter(`login:account:${email}`, perAccount, LOGIN_WINDOW_MS),
      failures.retryAfter(`login:pair:${email}|${ip}`, 1, LOGIN_WINDOW_MS),
    ]);
    if (address > 0) throw tooMany(address, perAddress);
    const wait = Math.max(pair, pairFailed > 0 ? account : 0);
    if (wait > 0) throw tooMany(wait, perAccount);
  }

  async function failed(email: string, ip: string): Promise<never> {
    await failures.record(`login:account:${email}`, LOGIN_WINDOW_MS);
    await failures.record(`login:pair:${email}|${ip}`, LOGIN_WINDOW_MS);
    await failures.record(`login:address:${ip}`, LOGIN_WINDOW_MS);
    throw wrongCredentials();
  }

  /** Setup and invite codes: an address that keeps guessing them gets 429, as for logins. */
  async function guessing(kind: "setup" | "invite", ip: string): Promise<void> {
    const wait = await failures.retryAfter(`${kind}:address:${ip}`, deps.limits.perAccount, LOGIN_WINDOW_MS);
    if (wait > 0) throw tooMany(wait, deps.limits.perAccount, `wrong ${kind} codes`);
  }
  async function wrongCode(kind: "setup" | "invite", ip: string, error: AppError): Promise<never> {
    await failures.record(`${kind}:address:${ip}`, LOGIN_WINDOW_MS);
    throw error;
  }

  /** The member with this e-mail and password; an unknown e-mail costs the same and answers the same. */
  async function authenticate(email: string, password: string, ip: string): Promise<MemberRow> {
    await limited(email, ip);
    const member = await findMemberByEmail(db, email);
    if (!(await verifyPassword(member?.password_hash, password)) || !member) return failed(email, ip);
    return member;
  }

  return {
    async login(body: LoginBody, ip: string): Promise<Opened> {
      return open(await authenticate(normalizeEmail(body.email), body.password, ip), ip);
    },

    async logout(principal: MemberPrincipal): Promise<void> {
      await deleteSession(db, principal.member.sessionId);
    },

    async current(principal: MemberPrincipal, token: string): Promise<SessionRead> {
      return sessionRead(principal.member.id, principal.member.sessionId, token);
    },

    /** Makes another of the member's organizations the active one (404 for one it holds no grant in). */
    async switchOrganization(principal: MemberPrincipal, ref: string, token: string): Promise<SessionRead> {
      const { column, value } = idOrKey(ref);
      const ids = await memberOrganizationIds(db, principal.member.id);
      const row =
        ids.length === 0
          ? undefined
          : await db
              .selectFrom("organizations")
              .select("id")
              .where("id", "in", ids)
              .where(column, "=", value)
              .executeTakeFirst();
      if (!row) throw notFound("organization", ref);
      await setActiveOrganization(db, principal.member.sessionId, row.id);
      return sessionRead(principal.member.id, principal.member.sessionId, token);
    },

    /** A new password; the member's other sessions end. */
    async changePassword(principal: MemberPrincipal, body: PasswordChange, ip: string): Promise<void> {
      const member = await findMemberById(db, principal.member.id);
      if (!member) throw new AppError("UNAUTHORIZED", "the session is not valid or has ended; log in again");
      await authenticate(member.email, body.current_password, ip);
      assertAcceptablePassword(body.new_password, member.email, ["body", "new_password"]);
      const hash = await hashPassword(body.new_password);
      await db.transaction().execute(async (trx) => {
        await setPasswordHash(trx, member.id, hash);
        await deleteMemberSessions(trx, member.id, { exceptSessionId: principal.member.sessionId });
      });
    },

    /**
     * Accepts an invite once: a new member chooses its password; an existing member (of another organization)
     * proves it with its own password, which does not change.
     */
    async acceptInvite(body: AcceptInviteBody, ip: string): Promise<Opened> {
      await guessing("invite", ip);
      const invite = await findInviteByCodeHash(db, hashSecret(body.invite_code));
      if (!invite) return wrongCode("invite", ip, notFound("invite", "(code)"));
      if (invite.used_at !== null) throw new AppError("CONFLICT", "this invite has already been used");
      if (invite.expires_at <= now())
        throw new AppError("CONFLICT", "this invite has expired; ask for another");
      const existing = await findMemberByEmail(db, invite.email);
      if (existing) await authenticate(existing.email, body.password, ip);
      else assertAcceptablePassword(body.password, invite.email);
      const hash = existing ? undefined : await hashPassword(body.password);
      const grant = orgAdminGrant(invite.organization_id, invite.access_level as "admin");
      const member = await db.transaction().execute(async (trx) => {
        const row =
          existing ??
          (await insertMemberWithGrant(
            trx,
            {
              email: invite.email,
              passwordHash: hash!,
              firstName: body.first_name,
              lastName: body.last_name,
            },
            grant,
          ));
        if (existing) await putGrant(trx, existing.id, grant);
        if (!(await markInviteUsed(trx, invite.id, row.id, now()))) {
          throw new AppError("CONFLICT", "this invite has already been used");
        }
        return row;
      });
      return open(member, ip, invite.organization_id);
    },

    /** The first start's setup link: creates the owner (admin of the first organization) and logs it in. */
    async setup(body: SetupBody, ip: string): Promise<Opened> {
      await guessing("setup", ip);
      assertAcceptablePassword(body.password, body.email);
      const hash = await hashPassword(body.password);
      const member = await db.transaction().execute(async (trx) => {
        const organizationId = await firstOrganizationId(trx);
        // Setup links that outlived the owner (an import, say, brought members in) redeem nothing: a link works
        // only while nobody is a member, which the organization's lock makes true until this commits.
        if (organizationId) await lockOrganization(trx, organizationId);
        const redeemed = (await countMembers(trx)) === 0 && (await redeemSetupToken(trx, body.setup_token));
        if (!redeemed) return undefined;
        if (!organizationId) throw new AppError("CONFLICT", "there is no organization to administer");
        return insertMemberWithGrant(
          trx,
          { email: body.email, passwordHash: hash, firstName: body.first_name, lastName: body.last_name },
          orgAdminGrant(organizationId),
        );
      });
      if (!member) return wrongCode("setup", ip, notFound("setup link", "(token): unknown, used or expired"));
      return open(member, ip);
    },
  };
}
