import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { RolesTable } from "../../db/types.ts";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";
import { matchesSearch, pageOfIds, type RoleRow } from "../../domain/schema/schema.repo.ts";

/** SQL of the roles table and what hangs off a role; tenant roles and resource roles share it. */

export const insertRole = (db: Db, row: Insertable<RolesTable>) =>
  db.insertInto("roles").values(row).execute();

export const updateRole = (db: Db, id: string, patch: Updateable<RolesTable>): Promise<RoleRow> =>
  db.updateTable("roles").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteRoles = async (db: Db, ids: string[]): Promise<void> => {
  if (ids.length > 0) await db.deleteFrom("roles").where("id", "in", ids).execute();
};

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

export async function rolePermissionIds(db: Db, envId: string, roleId: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom("role_permissions")
    .select("action_id")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  return new Set(rows.map((r) => r.action_id));
}

export async function addRolePermissions(db: Db, envId: string, roleId: string, actionIds: string[]) {
  const held = await rolePermissionIds(db, envId, roleId);
  const missing = actionIds.filter((id) => !held.has(id));
  if (missing.length === 0) return;
  await db
    .insertInto("role_permissions")
    .values(missing.map((action_id) => ({ environment_id: envId, role_id: roleId, action_id })))
    .execute();
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

export async function replaceRolePermissions(db: Db, envId: string, roleId: string, actionIds: string[]) {
  await db
    .deleteFrom("role_permissions")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  await addRolePermissions(db, envId, roleId, actionIds);
}

export async function addRoleExtends(db: Db, envId: string, roleId: string, parentIds: string[]) {
  const rows = await db
    .selectFrom("role_extends")
    .select("extends_role_id")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  const held = new Set(rows.map((r) => r.extends_role_id));
  const missing = parentIds.filter((id) => !held.has(id));
  if (missing.length === 0) return;
  await db
    .insertInto("role_extends")
    .values(missing.map((extends_role_id) => ({ environment_id: envId, role_id: roleId, extends_role_id })))
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

export async function replaceRoleExtends(db: Db, envId: string, roleId: string, parentIds: string[]) {
  await db
    .deleteFrom("role_extends")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  await addRoleExtends(db, envId, roleId, parentIds);
}

export interface DerivationInput {
  sourceRoleId: string;
  relationId: string;
  noDirectRolesOnObject: boolean;
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

export async function insertDerivations(db: Db, envId: string, roleId: string, rules: DerivationInput[]) {
  if (rules.length === 0) return;
  const at = now();
  await db
    .insertInto("role_derivations")
    .values(
      rules.map((r) => ({
        id: newId(),
        environment_id: envId,
        role_id: roleId,
        source_role_id: r.sourceRoleId,
        relation_id: r.relationId,
        no_direct_roles_on_object: r.noDirectRolesOnObject ? 1 : 0,
        created_at: at,
      })),
    )
    .execute();
}

export const deleteDerivation = (db: Db, id: string) =>
  db.deleteFrom("role_derivations").where("id", "=", id).execute();

export async function replaceDerivations(db: Db, envId: string, roleId: string, rules: DerivationInput[]) {
  await db
    .deleteFrom("role_derivations")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  await insertDerivations(db, envId, roleId, rules);
}

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
