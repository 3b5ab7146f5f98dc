import type { Db } from "../../db/db.ts";
import { matchesSearch, pageOfIds } from "../../domain/schema/schema.repo.ts";
import { removeIds, type DerivationInput } from "../../domain/schema/roles.repo.ts";

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

export const removeRolePermissions = (db: Db, envId: string, roleId: string, actionIds: string[]) =>
  removeIds(db, "permissions", envId, roleId, actionIds);
export const removeRoleExtends = (db: Db, envId: string, roleId: string, parentIds: string[]) =>
  removeIds(db, "extends", envId, roleId, parentIds);

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

/** Actions with their resource's key, of the resources with the given keys or with the given ids. */
const actionsWhere = (db: Db, envId: string, column: "r.key" | "a.id", values: string[]) =>
  values.length === 0
    ? Promise.resolve([])
    : db
        .selectFrom("resource_actions as a")
        .innerJoin("resources as r", "r.id", "a.resource_id")
        .select(["a.id", "a.key", "r.key as resource_key"])
        .where("a.environment_id", "=", envId)
        .where(column, "in", values)
        .execute();

/** Actions named by "resource:action" strings: every action of the named resources. */
export const actionsOfResources = (db: Db, envId: string, resourceKeys: string[]) =>
  actionsWhere(db, envId, "r.key", resourceKeys);

export const actionsByIds = (db: Db, envId: string, ids: string[]) => actionsWhere(db, envId, "a.id", ids);

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
