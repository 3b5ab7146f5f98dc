import type { Kysely, Selectable } from "kysely";
import { isPostgres, type Db } from "../db/db.ts";
import type { Database, MemberGrantsTable, MembersTable } from "../db/types.ts";
import { isUniqueViolation } from "../db/errors.ts";
import type { AccessLevel, Grant, ScopeLevel } from "../lib/access.ts";
import { AppError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { now } from "../lib/time.ts";

/**
 * Members and their grants: written by the members module (grants, removal), the auth module (invites accepted,
 * the first owner) and the command line (`gatehouse members`); read by the auth plugin for every session call.
 */

export type MemberRow = Selectable<MembersTable>;
export type GrantRow = Selectable<MemberGrantsTable>;

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export const findMemberByEmail = (db: Db, email: string): Promise<MemberRow | undefined> =>
  db.selectFrom("members").selectAll().where("email", "=", normalizeEmail(email)).executeTakeFirst();

export const findMemberById = (db: Db, id: string): Promise<MemberRow | undefined> =>
  db.selectFrom("members").selectAll().where("id", "=", id.toLowerCase()).executeTakeFirst();

export interface NewMember {
  email: string;
  /** null: the member signs in with single sign-on only */
  passwordHash: string | null;
  firstName?: string | undefined;
  lastName?: string | undefined;
}

/** 409 when the e-mail already belongs to a member. */
export async function insertMember(db: Db, input: NewMember): Promise<MemberRow> {
  const at = now();
  const row: MemberRow = {
    id: newId(),
    email: normalizeEmail(input.email),
    password_hash: input.passwordHash,
    first_name: input.firstName ?? null,
    last_name: input.lastName ?? null,
    settings: null,
    onboarding_step: "done",
    created_at: at,
    updated_at: at,
    last_login: null,
    last_ip: null,
    logins_count: 0,
  };
  try {
    await db.insertInto("members").values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw new AppError("CONFLICT", "a member with this e-mail already exists");
    throw e;
  }
  // The first start's setup links create the owner only while nobody is a member: once someone is, they go.
  await db.deleteFrom("setup_tokens").execute();
  return row;
}

export const setPasswordHash = (db: Db, memberId: string, passwordHash: string) =>
  db
    .updateTable("members")
    .set({ password_hash: passwordHash, updated_at: now() })
    .where("id", "=", memberId)
    .execute();

export interface GrantTarget {
  organizationId: string;
  level: ScopeLevel;
  access: AccessLevel;
  projectId: string | null;
  environmentId: string | null;
}

/** Grants one object to a member; a grant on the same object is replaced (one access level per object). */
export async function putGrant(db: Db, memberId: string, target: GrantTarget): Promise<void> {
  await deleteGrantOn(db, memberId, target);
  await db
    .insertInto("member_grants")
    .values({
      id: newId(),
      member_id: memberId,
      organization_id: target.organizationId,
      project_id: target.projectId,
      environment_id: target.environmentId,
      object_type: target.level,
      access_level: target.access,
      created_at: now(),
    })
    .execute();
}

export async function deleteGrantOn(db: Db, memberId: string, target: Omit<GrantTarget, "access">) {
  let q = db
    .deleteFrom("member_grants")
    .where("member_id", "=", memberId)
    .where("organization_id", "=", target.organizationId)
    .where("object_type", "=", target.level);
  q =
    target.projectId === null
      ? q.where("project_id", "is", null)
      : q.where("project_id", "=", target.projectId);
  q =
    target.environmentId === null
      ? q.where("environment_id", "is", null)
      : q.where("environment_id", "=", target.environmentId);
  await q.execute();
}

/** How many members are organization admins of the organization (the last one cannot go). */
/**
 * Orders the transactions that change who administers an organization (its admin grants and admin keys): on
 * PostgreSQL the organization's row stays locked until COMMIT, so each one's "is an admin left?" count sees the
 * others' changes. Without it two concurrent demotions each counted the other admin and both committed. SQLite
 * runs one writing transaction at a time already.
 */
export async function lockOrganization(trx: Db, organizationId: string): Promise<void> {
  if (!isPostgres(trx)) return;
  await trx.selectFrom("organizations").select("id").where("id", "=", organizationId).forUpdate().execute();
}

export async function countOrgAdmins(db: Db, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom("member_grants")
    .select((eb) => eb.fn.count<number>("member_id").distinct().as("n"))
    .where("organization_id", "=", organizationId)
    .where("object_type", "=", "org")
    .where("access_level", "=", "admin")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A member's grants, with the keys of their projects and environments; in one organization when given. */
export async function grantsOf(
  db: Db | Kysely<Database>,
  memberId: string,
  organizationId?: string,
): Promise<(Grant & { organizationId: string })[]> {
  let q = db
    .selectFrom("member_grants as g")
    .leftJoin("projects as p", "p.id", "g.project_id")
    .leftJoin("environments as e", "e.id", "g.environment_id")
    .select([
      "g.organization_id",
      "g.object_type",
      "g.access_level",
      "g.project_id",
      "g.environment_id",
      "p.key as project_key",
      "e.key as environment_key",
    ])
    .where("g.member_id", "=", memberId);
  if (organizationId !== undefined) q = q.where("g.organization_id", "=", organizationId);
  const rows = await q.orderBy("g.created_at").orderBy("g.id").execute();
  return rows.map((r) => ({
    organizationId: r.organization_id,
    level: r.object_type as ScopeLevel,
    access: r.access_level as AccessLevel,
    projectId: r.project_id,
    projectKey: r.project_key,
    environmentId: r.environment_id,
    environmentKey: r.environment_key,
  }));
}

/** The organizations a member holds a grant in, oldest grant first. */
export async function memberOrganizationIds(db: Db | Kysely<Database>, memberId: string): Promise<string[]> {
  const grants = await grantsOf(db, memberId);
  return [...new Set(grants.map((g) => g.organizationId))];
}

/** A new member with one grant, in one transaction: an accepted invite, the first owner, `gatehouse members add`. */
export async function insertMemberWithGrant(
  db: Db,
  input: NewMember,
  grant: GrantTarget,
): Promise<MemberRow> {
  const row = await insertMember(db, input);
  await putGrant(db, row.id, grant);
  return row;
}

/** The organization the first owner administers: the oldest one (the one the first start created). */
export async function firstOrganizationId(db: Db, key?: string): Promise<string | undefined> {
  let q = db.selectFrom("organizations").select("id");
  if (key !== undefined) q = q.where("key", "=", key);
  const row = await q.orderBy("created_at").orderBy("id").limit(1).executeTakeFirst();
  return row?.id;
}

export const orgAdminGrant = (organizationId: string, access: AccessLevel = "admin"): GrantTarget => ({
  organizationId,
  level: "org",
  access,
  projectId: null,
  environmentId: null,
});

export const countMembers = async (db: Db): Promise<number> =>
  Number(
    (
      await db
        .selectFrom("members")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow()
    ).n,
  );
