import type { Db } from "../../db/db.ts";
import { listState, noFilter } from "../../domain/facts/list-pages.repo.ts";
import type { AssignmentWithKeys } from "../../domain/facts/role-assignments.repo.ts";

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
