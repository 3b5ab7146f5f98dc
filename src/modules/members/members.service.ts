import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { ownOrganizationId } from "../../domain/organization-records.ts";
import type { Db as Trx } from "../../db/db.ts";
import { enqueueEvent, organizationScope } from "../../changes/events.ts";
import type { Principal } from "../../lib/access.ts";
import { AppError, forbidden, notFound } from "../../lib/errors.ts";
import { isUuid } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import type { Mailer } from "../../lib/mailer.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { hashSecret, type SecretBox } from "../../lib/secrets.ts";
import { now, toTimestamp } from "../../lib/time.ts";
import { findEnvironment } from "../../domain/environment-records.ts";
import { findProject } from "../../domain/project-records.ts";
import {
  countOrgAdmins,
  lockOrganization,
  deleteGrantOn,
  findMemberByEmail,
  findMemberById,
  normalizeEmail,
  putGrant,
  type GrantTarget,
  type MemberRow,
} from "../../domain/member-records.ts";
import { deleteMemberSessions } from "../../domain/session-records.ts";
import {
  deleteInvite,
  deleteMember,
  deleteMemberGrantsIn,
  hasGrantIn,
  insertInvite,
  listInvites,
  listMemberIds,
  permissionsOf,
  type InviteRow,
} from "./members.repo.ts";
import type {
  InviteCreate,
  InviteRead,
  MultiInviteResult,
  OrgMemberCreate,
  OrgMemberReadWithGrants,
  OrgMemberRemovePermissions,
  OrgMemberUpdate,
  OwnProfileUpdate,
  Permission,
  PermissionInput,
} from "./members.schemas.ts";

type Db = Kysely<Database>;

const lastAdmin = () =>
  new AppError("CONFLICT", "this is the organization's last admin member; make another member admin first");

export function memberRead(row: MemberRow, grants: Permission[]): OrgMemberReadWithGrants {
  const name = [row.first_name, row.last_name].filter((part) => part).join(" ");
  return {
    id: row.id,
    email: row.email,
    email_verified: false,
    ...(name !== "" && { name }),
    ...(row.first_name !== null && { given_name: row.first_name }),
    ...(row.last_name !== null && { family_name: row.last_name }),
    is_superuser: false,
    is_onboarding: row.onboarding_step !== "done",
    onboarding_step: row.onboarding_step as OrgMemberReadWithGrants["onboarding_step"],
    created_at: row.created_at,
    ...(row.last_login !== null && { last_login: row.last_login }),
    ...(row.last_ip !== null && { last_ip: row.last_ip }),
    logins_count: row.logins_count,
    identities: [],
    settings: fromJsonObject(row.settings),
    grants,
  };
}

/** The invite's public shape; the code (of the accept link) is shown to the organization's admins. */
export function inviteRead(row: InviteRow, code: string | undefined): InviteRead {
  return {
    ...(row.member_id !== null && { member_id: row.member_id }),
    email: row.email,
    role: row.access_level as InviteRead["role"],
    id: row.id,
    organization_id: row.organization_id,
    invite_code: code ?? "",
    created_at: row.created_at,
    expires_at: row.expires_at,
    status: (row.status === "pending" && row.expires_at <= now()
      ? "failed"
      : row.status) as InviteRead["status"],
    ...(row.failed_reason !== null && { failed_reason: row.failed_reason }),
    ...(row.status === "pending" && row.expires_at <= now() && { failed_reason: "expired" }),
  };
}

/** A grant asked for in a request, checked against the caller's organization: its project and environment exist. */
/** The role of an invite made through POST /v2/members: one organization-level permission in the caller's organization. */
function inviteRole(organizationId: string, permissions: PermissionInput[]): InviteRead["role"] {
  const [only, ...more] = permissions;
  if (
    !only ||
    more.length > 0 ||
    only.object_type !== "org" ||
    only.organization_id.toLowerCase() !== organizationId
  ) {
    throw new AppError(
      "INVALID_INPUT",
      "someone who is not a member of this organization yet is invited with one organization-level permission " +
        "(object_type org); give project and environment grants once they have accepted",
    );
  }
  return only.access_level;
}

async function grantTarget(db: Db, organizationId: string, p: PermissionInput): Promise<GrantTarget> {
  if (p.organization_id.toLowerCase() !== organizationId) {
    throw forbidden("a grant can only be given in the caller's own organization");
  }
  const base = { organizationId, level: p.object_type, access: p.access_level };
  if (p.object_type === "org") return { ...base, projectId: null, environmentId: null };
  if (!p.project_id) throw new AppError("INVALID_INPUT", `a ${p.object_type} grant needs project_id`);
  const project = await findProject(db, organizationId, p.project_id);
  if (!project) throw notFound("project", p.project_id);
  if (p.object_type === "project") return { ...base, projectId: project.id, environmentId: null };
  if (!p.environment_id) throw new AppError("INVALID_INPUT", "an env grant needs environment_id");
  const environment = await findEnvironment(db, project.id, p.environment_id);
  if (!environment) throw notFound("environment", p.environment_id);
  return { ...base, projectId: project.id, environmentId: environment.id };
}

/** A member's webhook event (docs/events.md): who, and the permissions given or taken. */
const memberEvent = (
  trx: Trx,
  organizationId: string,
  type: string,
  member: MemberRow,
  permissions?: readonly unknown[],
) =>
  enqueueEvent(trx, organizationScope(organizationId), type, {
    member: { id: member.id, email: member.email },
    ...(permissions && { permissions }),
  });

/** An invite's webhook event: never its code. */
const inviteEvent = (trx: Trx, invite: InviteRow, type: string) =>
  enqueueEvent(trx, organizationScope(invite.organization_id), type, {
    invite: {
      id: invite.id,
      email: invite.email,
      access_level: invite.access_level,
      status: invite.status,
      expires_at: invite.expires_at,
    },
  });

export function createMembersService(deps: {
  db: Db;
  box: SecretBox;
  publicUrl: string;
  inviteExpiryDays: number;
  mailer: Mailer | undefined;
  log: { warn(obj: object, msg: string): void };
}) {
  const { db, box } = deps;

  async function withGrants(organizationId: string, rows: MemberRow[]): Promise<OrgMemberReadWithGrants[]> {
    const grants = await permissionsOf(
      db,
      organizationId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => memberRead(r, grants.get(r.id) ?? []));
  }

  /** A member of the caller's organization, by id or e-mail: any other is "not found". */
  async function inOrganization(principal: Principal, ref: string): Promise<MemberRow> {
    const row = isUuid(ref) ? await findMemberById(db, ref) : await findMemberByEmail(db, ref);
    if (!row || !(await hasGrantIn(db, row.id, principal.organizationId))) throw notFound("member", ref);
    return row;
  }

  async function read(principal: Principal, row: MemberRow): Promise<OrgMemberReadWithGrants> {
    const [out] = await withGrants(principal.organizationId, [row]);
    return out!;
  }

  /** The organization a path names, which must be the caller's. */
  const ownOrganization = (principal: Principal, ref: string) => ownOrganizationId(db, principal, ref);

  async function mailInvite(invite: InviteRow, code: string, inviter: string | undefined) {
    if (!deps.mailer) return undefined;
    try {
      await deps.mailer.send({
        to: invite.email,
        subject: "You are invited to Gatehouse",
        text:
          `${inviter ?? "An administrator"} invites you to an organization on Gatehouse.\n\n` +
          `Accept the invite and choose your password: ${deps.publicUrl}/invite/${code}\n\n` +
          `The link works once and expires on ${invite.expires_at}.\n`,
      });
      return undefined;
    } catch (err) {
      deps.log.warn(
        { inviteId: invite.id, reason: err instanceof Error ? err.message : String(err) },
        "invite e-mail could not be sent",
      );
      return "the invite e-mail could not be sent; copy the accept link instead";
    }
  }

  return {
    async list(
      principal: Principal,
      filter: { projectRef?: string | undefined; envRef?: string | undefined },
      page: PageRequest,
    ): Promise<OrgMemberReadWithGrants[]> {
      let projectId: string | undefined;
      let environmentId: string | undefined;
      if (filter.projectRef) {
        const project = await findProject(db, principal.organizationId, filter.projectRef);
        if (!project) throw notFound("project", filter.projectRef);
        projectId = project.id;
        if (filter.envRef) {
          const environment = await findEnvironment(db, project.id, filter.envRef);
          if (!environment) throw notFound("environment", filter.envRef);
          environmentId = environment.id;
        }
      }
      const ids = await listMemberIds(
        db,
        principal.organizationId,
        { projectId, environmentId },
        offsetOf(page),
        page.perPage,
      );
      if (ids.length === 0) return [];
      const rows = await db
        .selectFrom("members")
        .selectAll()
        .where("id", "in", ids)
        .orderBy("email")
        .execute();
      return withGrants(principal.organizationId, rows);
    },

    async me(principal: Principal & { member: { id: string } }): Promise<OrgMemberReadWithGrants> {
      const row = await findMemberById(db, principal.member.id);
      if (!row) throw new AppError("UNAUTHORIZED", "the session is not valid or has ended; log in again");
      return read(principal, row);
    },

    /** A member's own names: any member, whatever its grants. */
    async updateMe(principal: Principal & { member: { id: string } }, body: OwnProfileUpdate) {
      await db
        .updateTable("members")
        .set({
          ...(body.given_name !== undefined && { first_name: body.given_name }),
          ...(body.family_name !== undefined && { last_name: body.family_name }),
          updated_at: now(),
        })
        .where("id", "=", principal.member.id)
        .execute();
      return this.me(principal);
    },

    async get(principal: Principal, ref: string) {
      return read(principal, await inOrganization(principal, ref));
    },

    /**
     * Grants to a member of the organization (by id or e-mail). Anyone else given by e-mail, whether or not they
     * have an account (in another organization, say), is invited: nothing about a person is shown to, or given
     * to, an organization they have not joined, and the answer does not tell whether the e-mail has an account.
     */
    async grant(
      principal: Principal,
      body: OrgMemberCreate,
      inviter: string | undefined,
    ): Promise<{ member: OrgMemberReadWithGrants } | { invite: InviteRead }> {
      const ref = body.id ?? body.email;
      if (!ref) throw new AppError("INVALID_INPUT", "give the member's id or email");
      const found = body.id ? await findMemberById(db, body.id) : await findMemberByEmail(db, ref);
      const row = found && (await hasGrantIn(db, found.id, principal.organizationId)) ? found : undefined;
      if (!row) {
        if (!body.email) throw notFound("member", ref);
        const role = inviteRole(principal.organizationId, body.permissions);
        const invited = await this.invite(
          principal,
          principal.organizationId,
          [{ email: body.email, role }],
          inviter,
        );
        return { invite: invited.success[0]! };
      }
      const targets: GrantTarget[] = [];
      for (const p of body.permissions) targets.push(await grantTarget(db, principal.organizationId, p));
      await db.transaction().execute(async (trx) => {
        await lockOrganization(trx, principal.organizationId);
        for (const target of targets) await putGrant(trx, row.id, target);
        if ((await countOrgAdmins(trx, principal.organizationId)) === 0) throw lastAdmin();
        await memberEvent(trx, principal.organizationId, "member.granted", row, body.permissions);
      });
      return { member: await read(principal, row) };
    },

    /** Takes grants away; the last organization admin keeps its grant (409). */
    async revoke(principal: Principal, body: OrgMemberRemovePermissions): Promise<void> {
      const row = await inOrganization(principal, body.id);
      const targets: GrantTarget[] = [];
      for (const p of body.permissions) targets.push(await grantTarget(db, principal.organizationId, p));
      await db.transaction().execute(async (trx) => {
        await lockOrganization(trx, principal.organizationId);
        for (const target of targets) await deleteGrantOn(trx, row.id, target);
        if ((await countOrgAdmins(trx, principal.organizationId)) === 0) throw lastAdmin();
        await memberEvent(trx, principal.organizationId, "member.revoked", row, body.permissions);
      });
    },

    async update(principal: Principal, ref: string, body: OrgMemberUpdate) {
      const row = await inOrganization(principal, ref);
      if (principal.member && principal.member.id !== row.id && principal.access !== "admin") {
        throw forbidden("only an organization admin may update another member");
      }
      await db
        .updateTable("members")
        .set({
          ...(body.settings !== undefined && { settings: toJson(body.settings) }),
          ...(body.onboarding_step !== undefined && { onboarding_step: body.onboarding_step }),
          updated_at: now(),
        })
        .where("id", "=", row.id)
        .execute();
      return read(principal, (await findMemberById(db, row.id))!);
    },

    /**
     * Removes a member from the organization: its grants there go, and with them its sessions active there; a
     * member left with no organization is deleted. The last organization admin cannot go (409).
     */
    async remove(principal: Principal, ref: string): Promise<void> {
      const row = await inOrganization(principal, ref);
      await db.transaction().execute(async (trx) => {
        await lockOrganization(trx, principal.organizationId);
        await deleteMemberGrantsIn(trx, row.id, principal.organizationId);
        if ((await countOrgAdmins(trx, principal.organizationId)) === 0) throw lastAdmin();
        const elsewhere = await trx
          .selectFrom("member_grants")
          .select("id")
          .where("member_id", "=", row.id)
          .limit(1)
          .executeTakeFirst();
        if (elsewhere) await deleteMemberSessions(trx, row.id, { organizationId: principal.organizationId });
        else await deleteMember(trx, row.id);
        await memberEvent(trx, principal.organizationId, "member.removed", row);
      });
    },

    async listInvites(principal: Principal, orgRef: string, page: PageRequest): Promise<InviteRead[]> {
      const organizationId = await ownOrganization(principal, orgRef);
      const rows = await listInvites(db, organizationId, offsetOf(page), page.perPage);
      return rows.map((row) => inviteRead(row, box.open(row.code_sealed)));
    },

    async invite(
      principal: Principal,
      orgRef: string,
      invites: InviteCreate[],
      inviter: string | undefined,
    ): Promise<MultiInviteResult> {
      const organizationId = await ownOrganization(principal, orgRef);
      const result: MultiInviteResult = { success: [], failed: [] };
      const at = Date.now();
      for (const input of invites) {
        const email = normalizeEmail(input.email);
        const existing = await findMemberByEmail(db, email);
        if (existing && (await hasGrantIn(db, existing.id, organizationId))) {
          result.failed.push({ email, reason: "already a member of this organization" });
          continue;
        }
        const code = randomUUID();
        const row: InviteRow = {
          id: randomUUID(),
          organization_id: organizationId,
          email,
          access_level: input.role ?? "admin",
          code_hash: hashSecret(code),
          code_sealed: box.seal(code),
          status: "pending",
          failed_reason: null,
          member_id: null,
          created_by_member_id: principal.member?.id ?? null,
          created_at: toTimestamp(new Date(at)),
          expires_at: toTimestamp(new Date(at + deps.inviteExpiryDays * 86_400_000)),
          used_at: null,
        };
        await db.transaction().execute(async (trx) => {
          await insertInvite(trx, row);
          await inviteEvent(trx, row, "invite.created");
        });
        const failedReason = await mailInvite(row, code, inviter);
        result.success.push({
          ...inviteRead(row, code),
          ...(failedReason !== undefined && { failed_reason: failedReason }),
        });
      }
      return result;
    },

    async cancelInvite(principal: Principal, orgRef: string, id: string): Promise<void> {
      const organizationId = await ownOrganization(principal, orgRef);
      await db.transaction().execute(async (trx) => {
        const gone = await deleteInvite(trx, organizationId, id.toLowerCase());
        if (!gone) throw notFound("invite", id);
        await inviteEvent(trx, gone, "invite.cancelled");
      });
    },
  };
}
