import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ActionGroupsTable } from "../../db/types.ts";
import { idOrKey } from "../../lib/ids.ts";
import type { ActionGroupRow } from "../../domain/schema/schema.repo.ts";

export const findActionGroup = (
  db: Db,
  envId: string,
  resourceId: string,
  ref: string,
): Promise<ActionGroupRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("action_groups")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .where(column, "=", value)
    .executeTakeFirst();
};

/** group id -> the keys of its actions */
export async function actionGroupMembers(
  db: Db,
  envId: string,
  groupIds: string[],
): Promise<Map<string, string[]>> {
  const members = new Map<string, string[]>(groupIds.map((id) => [id, []]));
  if (groupIds.length === 0) return members;
  const rows = await db
    .selectFrom("action_group_actions as m")
    .innerJoin("resource_actions as a", "a.id", "m.action_id")
    .select(["m.action_group_id", "a.key"])
    .where("m.environment_id", "=", envId)
    .where("m.action_group_id", "in", groupIds)
    .orderBy("a.key")
    .execute();
  for (const row of rows) members.get(row.action_group_id)?.push(row.key);
  return members;
}

export const insertActionGroup = (db: Db, row: Insertable<ActionGroupsTable>) =>
  db.insertInto("action_groups").values(row).execute();

export const updateActionGroup = (
  db: Db,
  id: string,
  patch: Updateable<ActionGroupsTable>,
): Promise<ActionGroupRow> =>
  db.updateTable("action_groups").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteActionGroup = (db: Db, id: string) =>
  db.deleteFrom("action_groups").where("id", "=", id).execute();

export async function replaceActionGroupMembers(
  db: Db,
  envId: string,
  groupId: string,
  actionIds: string[],
): Promise<void> {
  await db.deleteFrom("action_group_actions").where("action_group_id", "=", groupId).execute();
  if (actionIds.length === 0) return;
  await db
    .insertInto("action_group_actions")
    .values(actionIds.map((action_id) => ({ environment_id: envId, action_group_id: groupId, action_id })))
    .execute();
}
