import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ResourceActionsTable } from "../../db/types.ts";
import type { ActionRow } from "./schema.repo.ts";

/** The action writes of resource-action-records.ts; the resource-actions module uses them too. */

export const insertAction = (db: Db, row: Insertable<ResourceActionsTable>) =>
  db.insertInto("resource_actions").values(row).execute();

export const updateAction = (
  db: Db,
  id: string,
  patch: Updateable<ResourceActionsTable>,
): Promise<ActionRow> =>
  db.updateTable("resource_actions").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteActions = async (db: Db, ids: string[]): Promise<void> => {
  if (ids.length > 0) await db.deleteFrom("resource_actions").where("id", "in", ids).execute();
};
