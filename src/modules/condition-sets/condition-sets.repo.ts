import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ConditionSetsTable } from "../../db/types.ts";
import { matchesSearch, pageOfIds } from "../../domain/schema/schema.repo.ts";

export async function listConditionSetIdsPage(
  db: Db,
  envId: string,
  filter: { search?: string | undefined; type?: string | undefined },
  offset: number,
  limit: number,
): Promise<{ ids: string[]; total: number }> {
  let q = db.selectFrom("condition_sets").where("environment_id", "=", envId);
  if (filter.type) q = q.where("type", "=", filter.type);
  if (filter.search) q = q.where(matchesSearch(["key", "name"], filter.search));
  return pageOfIds(q, offset, limit);
}

export const insertConditionSet = (db: Db, row: Insertable<ConditionSetsTable>) =>
  db.insertInto("condition_sets").values(row).execute();

export const updateConditionSet = (db: Db, id: string, patch: Updateable<ConditionSetsTable>) =>
  db.updateTable("condition_sets").set(patch).where("id", "=", id).execute();

export const deleteConditionSet = (db: Db, id: string) =>
  db.deleteFrom("condition_sets").where("id", "=", id).execute();
