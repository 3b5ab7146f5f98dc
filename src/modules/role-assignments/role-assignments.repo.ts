import { sql, type Insertable, type Selectable } from "kysely";
import { isPostgres, type Db } from "../../db/db.ts";
import type { RoleAssignmentsTable } from "../../db/types.ts";
import { inChunks } from "../../domain/facts/facts.repo.ts";
import { listState, noFilter } from "../../domain/facts/list-pages.repo.ts";

export type AssignmentRow = Selectable<RoleAssignmentsTable>;

/** An assignment with the keys a read shows. */
export interface AssignmentWithKeys extends AssignmentRow {
  user_key: string;
  role_key: string;
  tenant_key: string;
  instance_key: string | null;
  resource_key: string | null;
  /** What the detailed read shows of the user, role, tenant and instance. */
  user_email: string | null;
  user_first_name: string | null;
  user_last_name: string | null;
  user_attributes: string | null;
  role_name: string;
  tenant_name: string;
  tenant_attributes: string | null;
  instance_attributes: string | null;
}

export interface AssignmentFilter {
  userIds?: string[] | undefined;
  roleIds?: string[] | undefined;
  tenantIds?: string[] | undefined;
  /** Only roles on instances of this resource. */
  resourceId?: string | undefined;
  instanceId?: string | undefined;
  /** Only assignments still granting at this instant (no expiry, or a later one). */
  activeAt?: string | undefined;
  ids?: string[] | undefined;
}

function filtered(db: Db, envId: string, f: AssignmentFilter) {
  let q = db.selectFrom("role_assignments as ra").where("ra.environment_id", "=", envId);
  if (f.userIds) q = q.where("ra.user_id", "in", f.userIds);
  if (f.roleIds) q = q.where("ra.role_id", "in", f.roleIds);
  if (f.tenantIds) q = q.where("ra.tenant_id", "in", f.tenantIds);
  if (f.instanceId) q = q.where("ra.resource_instance_id", "=", f.instanceId);
  if (f.ids) q = q.where("ra.id", "in", f.ids);
  if (f.activeAt) {
    const at = f.activeAt;
    q = q.where((eb) => eb.or([eb("ra.expires_at", "is", null), eb("ra.expires_at", ">", at)]));
  }
  if (f.resourceId) {
    const resourceId = f.resourceId;
    q = q.where("ra.resource_instance_id", "in", (eb) =>
      eb
        .selectFrom("resource_instances as fri")
        .select("fri.id")
        .where("fri.environment_id", "=", envId)
        .where("fri.resource_id", "=", resourceId),
    );
  }
  return q;
}

const withKeys = (db: Db, envId: string, f: AssignmentFilter) =>
  filtered(db, envId, f)
    .innerJoin("users as u", "u.id", "ra.user_id")
    .innerJoin("roles as r", "r.id", "ra.role_id")
    .innerJoin("tenants as t", "t.id", "ra.tenant_id")
    .leftJoin("resource_instances as ri", "ri.id", "ra.resource_instance_id")
    .leftJoin("resources as res", "res.id", "ri.resource_id")
    .selectAll("ra")
    .select([
      "u.key as user_key",
      "r.key as role_key",
      "t.key as tenant_key",
      "ri.key as instance_key",
      "res.key as resource_key",
      "u.email as user_email",
      "u.first_name as user_first_name",
      "u.last_name as user_last_name",
      "u.attributes as user_attributes",
      "r.name as role_name",
      "t.name as tenant_name",
      "t.attributes as tenant_attributes",
      "ri.attributes as instance_attributes",
    ]);

export const listAssignmentsQuery = (
  db: Db,
  envId: string,
  f: AssignmentFilter,
  offset: number,
  limit: number,
) => withKeys(db, envId, f).orderBy("ra.created_at").orderBy("ra.id").offset(offset).limit(limit);

export const countAssignmentsQuery = (db: Db, envId: string, f: AssignmentFilter) =>
  filtered(db, envId, f).select((eb) => eb.fn.countAll<number>().as("n"));

export const listAssignments = (
  db: Db,
  envId: string,
  f: AssignmentFilter,
  offset: number,
  limit: number,
): Promise<AssignmentWithKeys[]> => listAssignmentsQuery(db, envId, f, offset, limit).execute();

/** The ended assignments the purge has not deleted yet (through the partial index on expires_at). */
export const expiredAssignmentsCountQuery = (db: Db, envId: string, at: string) =>
  db
    .selectFrom("role_assignments")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("environment_id", "=", envId)
    .where("expires_at", "is not", null)
    .where("expires_at", "<=", at);

/** Unfiltered (but for activeAt): the environment's counter less the ended assignments; filtered: a count. */
export async function countAssignments(db: Db, envId: string, f: AssignmentFilter): Promise<number> {
  const { activeAt, ...rest } = f;
  if (noFilter(rest)) {
    const { total } = await listState(db, envId, "role_assignments");
    if (activeAt === undefined) return total;
    const ended = await expiredAssignmentsCountQuery(db, envId, activeAt).executeTakeFirstOrThrow();
    return total - Number(ended.n);
  }
  const row = await countAssignmentsQuery(db, envId, f).executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface AssignmentKey {
  userId: string;
  roleId: string;
  tenantId: string;
  instanceId: string | null;
}

export async function findAssignment(
  db: Db,
  envId: string,
  k: AssignmentKey,
): Promise<AssignmentRow | undefined> {
  const q = db
    .selectFrom("role_assignments")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("user_id", "=", k.userId)
    .where("role_id", "=", k.roleId);
  return (
    k.instanceId === null
      ? q.where("tenant_id", "=", k.tenantId).where("resource_instance_id", "is", null)
      : q.where("resource_instance_id", "=", k.instanceId)
  ).executeTakeFirst();
}

/** The tenant-level assignments of the given users in the given roles, one query per 500 users. */
export const tenantAssignmentsOf = (db: Db, envId: string, userIds: string[], roleIds: string[]) =>
  roleIds.length === 0
    ? Promise.resolve([])
    : inChunks<string, AssignmentRow>(userIds, (slice) =>
        db
          .selectFrom("role_assignments")
          .selectAll()
          .where("environment_id", "=", envId)
          .where("user_id", "in", slice)
          .where("role_id", "in", roleIds)
          .where("resource_instance_id", "is", null)
          .execute(),
      );

/**
 * Inserts the assignments that are not held yet and returns the ids it inserted. One held by a transaction that
 * committed after this one looked is skipped too (the insert waits for that transaction).
 *
 * On PostgreSQL one statement whatever the number of rows, each column an array parameter: its text never changes,
 * where a VALUES list of 500 rows (5,000 parameters) was a new statement for PostgreSQL to parse each time and for
 * Kysely to build row by row. SQLite has no arrays: VALUES lists of 500 rows.
 */
export async function insertAssignments(
  db: Db,
  rows: Insertable<RoleAssignmentsTable>[],
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  if (!isPostgres(db)) {
    const inserted = await inChunks<Insertable<RoleAssignmentsTable>, { id: string }>(rows, (slice) =>
      db
        .insertInto("role_assignments")
        .values(slice)
        .onConflict((oc) => oc.doNothing())
        .returning("id")
        .execute(),
    );
    return new Set(inserted.map((r) => r.id));
  }
  const column = (pick: (row: Insertable<RoleAssignmentsTable>) => string | null | undefined) =>
    rows.map((row) => pick(row) ?? null);
  const inserted = await sql<{ id: string }>`insert into role_assignments (id, organization_id, project_id,
      environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at, expires_at)
    select * from unnest(${column((r) => r.id)}::text[], ${column((r) => r.organization_id)}::text[],
      ${column((r) => r.project_id)}::text[], ${column((r) => r.environment_id)}::text[],
      ${column((r) => r.user_id)}::text[], ${column((r) => r.role_id)}::text[], ${column((r) => r.tenant_id)}::text[],
      ${column((r) => r.resource_instance_id)}::text[], ${column((r) => r.created_at)}::text[],
      ${column((r) => r.expires_at)}::text[])
    on conflict do nothing returning id`.execute(db);
  return new Set(inserted.rows.map((r) => r.id));
}

/** Deletes one assignment; false when it is gone already (a concurrent transaction or the purge deleted it). */
export async function deleteAssignment(db: Db, envId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom("role_assignments")
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export const deleteAssignments = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db.deleteFrom("role_assignments").where("environment_id", "=", envId).where("id", "in", slice).execute(),
  );

/** Assignments whose expiry has come by `at`, earliest first, at most `limit` (read through the partial index). */
export const expiredAssignments = (db: Db, at: string, limit: number) =>
  db
    .selectFrom("role_assignments")
    .select(["id", "environment_id"])
    .where("expires_at", "<=", at)
    .orderBy("expires_at")
    .limit(limit)
    .execute();

/** The given assignments with their keys (for change records). */
export const assignmentsWithKeys = (db: Db, envId: string, ids: string[]) =>
  withKeys(db, envId, { ids }).execute();

/** Deletes those of the given assignments that have expired by `at`; returns the ids this call deleted. */
export async function deleteExpiredAssignments(db: Db, envId: string, ids: string[], at: string) {
  const rows = await db
    .deleteFrom("role_assignments")
    .where("environment_id", "=", envId)
    .where("id", "in", ids)
    .where("expires_at", "<=", at)
    .returning("id")
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** Every assignment of a user in a tenant (tenant roles and roles on the tenant's instances). */
export const assignmentsOfUserInTenant = (db: Db, envId: string, userId: string, tenantId: string) =>
  withKeys(db, envId, { userIds: [userId], tenantIds: [tenantId] }).execute();

/**
 * Permissions of the given roles as a role read shows them: `resource:action` for tenant roles, the bare
 * action key for a resource's own roles.
 */
export async function permissionsOfRoles(
  db: Db,
  envId: string,
  roleIds: string[],
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (roleIds.length === 0) return out;
  const rows = await db
    .selectFrom("role_permissions as rp")
    .innerJoin("roles as r", "r.id", "rp.role_id")
    .innerJoin("resource_actions as a", "a.id", "rp.action_id")
    .innerJoin("resources as res", "res.id", "a.resource_id")
    .select(["rp.role_id", "r.resource_id as role_resource_id", "a.key as action", "res.key as resource"])
    .where("rp.environment_id", "=", envId)
    .where("rp.role_id", "in", roleIds)
    .orderBy("res.key")
    .orderBy("a.key")
    .execute();
  for (const row of rows) {
    const list = out.get(row.role_id) ?? [];
    list.push(row.role_resource_id === null ? `${row.resource}:${row.action}` : row.action);
    out.set(row.role_id, list);
  }
  return out;
}
