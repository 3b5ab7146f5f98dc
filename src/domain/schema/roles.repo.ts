import type { Insertable, Kysely, Updateable } from "kysely";
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

/**
 * A role's two sets of ids: the actions it grants (role_permissions) and the roles it extends (role_extends). The
 * tables have the same shape but for the name of the id column, so one set of queries serves both.
 */
const ROLE_SETS = {
  permissions: { table: "role_permissions", column: "action_id" },
  extends: { table: "role_extends", column: "extends_role_id" },
} as const;
type RoleSet = keyof typeof ROLE_SETS;
type RoleSetRow = { environment_id: string; role_id: string; action_id: string; extends_role_id: string };
/** Kysely's view of the two tables as one shape (each row has only its own id column). */
const asRoleSets = (db: Db) =>
  db as unknown as Kysely<Record<(typeof ROLE_SETS)[RoleSet]["table"] | "role_derivations", RoleSetRow>>;

/** Deletes every row of `table` that belongs to the role. */
const clearRole = (
  db: Db,
  table: "role_permissions" | "role_extends" | "role_derivations",
  envId: string,
  roleId: string,
) =>
  asRoleSets(db)
    .deleteFrom(table)
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();

async function idsOf(db: Db, set: RoleSet, envId: string, roleId: string): Promise<Set<string>> {
  const { table, column } = ROLE_SETS[set];
  const rows = await asRoleSets(db)
    .selectFrom(table)
    .select(column)
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .execute();
  return new Set(rows.map((r) => r[column]));
}

async function addIds(db: Db, set: RoleSet, envId: string, roleId: string, ids: string[]) {
  const { table, column } = ROLE_SETS[set];
  const held = await idsOf(db, set, envId, roleId);
  const missing = ids.filter((id) => !held.has(id));
  if (missing.length === 0) return;
  await asRoleSets(db)
    .insertInto(table)
    .values(missing.map((id) => ({ environment_id: envId, role_id: roleId, [column]: id }) as RoleSetRow))
    .execute();
}

/** Removes the given ids from one of the role's sets; the roles modules' removals (roles.repo.ts) call it. */
export async function removeIds(db: Db, set: RoleSet, envId: string, roleId: string, ids: string[]) {
  if (ids.length === 0) return;
  const { table, column } = ROLE_SETS[set];
  await asRoleSets(db)
    .deleteFrom(table)
    .where("environment_id", "=", envId)
    .where("role_id", "=", roleId)
    .where(column, "in", ids)
    .execute();
}

async function replaceIds(db: Db, set: RoleSet, envId: string, roleId: string, ids: string[]) {
  await clearRole(db, ROLE_SETS[set].table, envId, roleId);
  await addIds(db, set, envId, roleId, ids);
}

export const addRolePermissions = (db: Db, envId: string, roleId: string, actionIds: string[]) =>
  addIds(db, "permissions", envId, roleId, actionIds);
export const replaceRolePermissions = (db: Db, envId: string, roleId: string, actionIds: string[]) =>
  replaceIds(db, "permissions", envId, roleId, actionIds);
export const addRoleExtends = (db: Db, envId: string, roleId: string, parentIds: string[]) =>
  addIds(db, "extends", envId, roleId, parentIds);
export const replaceRoleExtends = (db: Db, envId: string, roleId: string, parentIds: string[]) =>
  replaceIds(db, "extends", envId, roleId, parentIds);

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
  await clearRole(db, "role_derivations", envId, roleId);
  await insertDerivations(db, envId, roleId, rules);
}
