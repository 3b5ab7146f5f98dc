import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { AppError, notFound } from "../../lib/errors.ts";
import { idOrKey } from "../../lib/ids.ts";
import { assertAcceptablePassword, hashPassword, verifyPassword } from "../../lib/passwords.ts";
import { hashSecret } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { ssoOnlyOrganizationsOf } from "../../domain/login-settings-records.ts";
import { acceptTotpCode, hasTwoFactor, useRecoveryCode } from "../../domain/two-factor-records.ts";
import { createLoginThrottle, type ThrottleDeps } from "./login-throttle.ts";
import { createSessionOpener, type Opened } from "./session-opener.ts";
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

export type { Opened } from "./session-opener.ts";

type Db = Kysely<Database>;
type MemberPrincipal = Principal & { member: NonNullable<Principal["member"]> };

const wrongCredentials = () => new AppError("INVALID_CREDENTIALS", "the e-mail or password is wrong");

export function createSessionsService(
  deps: {
    db: Db;
    lifetime: SessionLifetime;
    box: SecretBox;
  } & ThrottleDeps,
) {
  const { db, lifetime } = deps;
  const { open, sessionRead } = createSessionOpener(db, lifetime);
  const { limited, failed, guessing, wrongCode } = createLoginThrottle(deps);

  /** The member with this e-mail and password; an unknown e-mail costs the same and answers the same. */
  async function authenticate(email: string, password: string, ip: string): Promise<MemberRow> {
    await limited(email, ip);
    const member = await findMemberByEmail(db, email);
    if (!(await verifyPassword(member?.password_hash, password)) || !member)
      return failed(email, ip, wrongCredentials());
    return member;
  }

  /**
   * After the right password: refused where an organization of the member requires SSO (but for its break-glass
   * admin); with a second factor, its code or a recovery code is needed too, and a wrong one is a failed login.
   */
  async function passwordMayLogIn(member: MemberRow, body: LoginBody, ip: string): Promise<void> {
    const ssoOnly = await ssoOnlyOrganizationsOf(db, member.id);
    if (ssoOnly.length > 0) {
      const { key, provider } = ssoOnly[0]!;
      throw new AppError(
        "SSO_REQUIRED",
        `organization '${key}' requires single sign-on: sign in with ${provider ?? "its identity provider"}`,
        { organization_key: key },
      );
    }
    if (!(await hasTwoFactor(db, member.id))) return;
    if (body.totp_code === undefined && body.recovery_code === undefined) {
      throw new AppError(
        "TWO_FACTOR_REQUIRED",
        "enter the code of your authenticator app or a recovery code",
      );
    }
    const accepted =
      body.totp_code !== undefined
        ? await acceptTotpCode(db, deps.box, member.id, body.totp_code)
        : await useRecoveryCode(db, member.id, body.recovery_code!);
    if (!accepted) {
      await failed(
        member.email,
        ip,
        new AppError("INVALID_TWO_FACTOR_CODE", "the code is wrong or already used"),
      );
    }
  }

  return {
    async login(body: LoginBody, ip: string): Promise<Opened> {
      const member = await authenticate(normalizeEmail(body.email), body.password, ip);
      await passwordMayLogIn(member, body, ip);
      return open(member, ip);
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
