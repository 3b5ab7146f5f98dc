import type { Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ResourcesTable } from "../../db/types.ts";
import { matchesSearch, pageOfIds, type ResourceRow } from "../../domain/schema/schema.repo.ts";

export async function listResourceIdsPage(
  db: Db,
  envId: string,
  filter: { search?: string | undefined; includeBuiltIn: boolean },
  offset: number,
  limit: number,
): Promise<{ ids: string[]; total: number }> {
  let q = db.selectFrom("resources").where("environment_id", "=", envId);
  if (!filter.includeBuiltIn) q = q.where("built_in", "=", 0);
  if (filter.search) q = q.where(matchesSearch(["key", "name"], filter.search));
  return pageOfIds(q, offset, limit);
}

export const updateResource = (db: Db, id: string, patch: Updateable<ResourcesTable>): Promise<ResourceRow> =>
  db.updateTable("resources").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteResource = (db: Db, id: string) =>
  db.deleteFrom("resources").where("id", "=", id).execute();
