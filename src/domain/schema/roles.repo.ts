import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { RolesTable } from "../../db/types.ts";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";
import type { RoleRow } from "./schema.repo.ts";

/** The role writes of the records in this folder (tenant and resource roles share them); the roles modules use them too. */

export const insertRole = (db: Db, row: Insertable<RolesTable>) =>
  db.insertInto("roles").values(row).execute();

export const updateRole = (db: Db, id: string, patch: Updateable<RolesTable>): Promise<RoleRow> =>
  db.updateTable("roles").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteRoles = async (db: Db, ids: string[]): Promise<void> => {
  if (ids.length > 0) await db.deleteFrom("roles").where("id", "in", ids).execute();
};

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

export async function replaceDerivations(db: Db, envId: string, roleId: string, rules: DerivationInput[]) {
  await db
    .deleteFrom("role_derivations")
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  await insertDerivations(db, envId, roleId, rules);
}
