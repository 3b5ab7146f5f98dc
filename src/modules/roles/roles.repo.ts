import type { Db } from "../../db/db.ts";
import { matchesSearch, pageOfIds, type RoleRow } from "../../domain/schema/schema.repo.ts";
import type { DerivationInput } from "../../domain/schema/roles.repo.ts";

/** The roles modules' own SQL of the roles table and what hangs off a role; the shared writes are in src/domain. */

export async function listTenantRolesPage(
  db: Db,
  envId: string,
  search: string | undefined,
  offset: number,
  limit: number,
): Promise<{ ids: string[]; total: number }> {
  let q = db.selectFrom("roles").where("environment_id", "=", envId).where("resource_id", "is", null);
  if (search) q = q.where(matchesSearch(["key", "name"], search));
  return pageOfIds(q, offset, limit);
}

export async function listResourceRoleIdsPage(
  db: Db,
  envId: string,
  resourceId: string,
  offset: number,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom("roles")
    .select("id")
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .orderBy("created_at")
    .orderBy("key")
    .offset(offset)
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

export async function removeRolePermissions(db: Db, envId: string, roleId: string, actionIds: string[]) {
  if (actionIds.length === 0) return;
  await db
    .deleteFrom("role_permissions")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .where("action_id", "in", actionIds)
    .execute();
}

export async function removeRoleExtends(db: Db, envId: string, roleId: string, parentIds: string[]) {
  if (parentIds.length === 0) return;
  await db
    .deleteFrom("role_extends")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .where("extends_role_id", "in", parentIds)
    .execute();
}

export const findDerivation = (db: Db, envId: string, roleId: string, rule: DerivationInput) =>
  db
    .selectFrom("role_derivations")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .where("source_role_id", "=", rule.sourceRoleId)
    .where("relation_id", "=", rule.relationId)
    .executeTakeFirst();

export const deleteDerivation = (db: Db, id: string) =>
  db.deleteFrom("role_derivations").where("id", "=", id).execute();

/** Actions named by "resource:action" strings: every action of the named resources. */
export const actionsOfResources = (db: Db, envId: string, resourceKeys: string[]) =>
  resourceKeys.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom("resource_actions as a")
        .innerJoin("resources as r", "r.id", "a.resource_id")
        .select(["a.id", "a.key", "r.key as resource_key"])
        .where("a.environment_id", "=", envId)
        .where("r.key", "in", resourceKeys)
        .execute();

export const actionsByIds = (db: Db, envId: string, ids: string[]) =>
  ids.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom("resource_actions as a")
        .innerJoin("resources as r", "r.id", "a.resource_id")
        .select(["a.id", "a.key", "r.key as resource_key"])
        .where("a.environment_id", "=", envId)
        .where("a.id", "in", ids)
        .execute();

export async function existingResourceKeys(db: Db, envId: string, keys: string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db
    .selectFrom("resources")
    .select("key")
    .where("environment_id", "=", envId)
    .where("key", "in", keys)
    .execute();
  return new Set(rows.map((r) => r.key));
}

/** Roles by key among the tenant roles (resourceId null) or the roles of one resource. */
export const rolesByKeys = (db: Db, envId: string, resourceId: string | null, keys: string[]) => {
  if (keys.length === 0) return Promise.resolve([] as RoleRow[]);
  let q = db.selectFrom("roles").selectAll().where("environment_id", "=", envId).where("key", "in", keys);
  q = resourceId === null ? q.where("resource_id", "is", null) : q.where("resource_id", "=", resourceId);
  return q.execute();
};
