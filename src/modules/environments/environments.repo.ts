import type { Insertable, Selectable, Updateable } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { EnvironmentsTable } from "../../db/types.ts";
import { idOrKey } from "../../lib/ids.ts";

export type EnvironmentRow = Selectable<EnvironmentsTable>;

export const findEnvironment = (
  db: Db,
  projectId: string,
  ref: string,
): Promise<EnvironmentRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("environments")
    .selectAll()
    .where("project_id", "=", projectId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export const findEnvironmentById = (db: Db, id: string): Promise<EnvironmentRow | undefined> =>
  db.selectFrom("environments").selectAll().where("id", "=", id).executeTakeFirst();

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

export const insertEnvironment = (db: Db, row: Insertable<EnvironmentsTable>) =>
  db.insertInto("environments").values(row).execute();

export const updateEnvironment = (db: Db, id: string, patch: Updateable<EnvironmentsTable>) =>
  db.updateTable("environments").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteEnvironment = (db: Db, id: string) =>
  db.deleteFrom("environments").where("id", "=", id).execute();
