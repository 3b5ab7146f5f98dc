import type { Updateable } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { EnvironmentsTable } from "../../db/types.ts";
import type { EnvironmentRow } from "../../domain/environment-records.ts";

export async function listEnvironments(
  db: Db,
  projectId: string,
  onlyId: string | null,
  offset: number,
  limit: number,
): Promise<EnvironmentRow[]> {
  let q = db.selectFrom("environments").selectAll().where("project_id", "=", projectId);
  if (onlyId) q = q.where("id", "=", onlyId);
  return q.orderBy("created_at").orderBy("id").offset(offset).limit(limit).execute();
}

export const updateEnvironment = (db: Db, id: string, patch: Updateable<EnvironmentsTable>) =>
  db.updateTable("environments").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteEnvironment = (db: Db, id: string) =>
  db.deleteFrom("environments").where("id", "=", id).execute();
