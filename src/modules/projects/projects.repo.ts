import type { Insertable, Selectable, Updateable } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { ProjectsTable } from "../../db/types.ts";
import { idOrKey } from "../../lib/ids.ts";

export type ProjectRow = Selectable<ProjectsTable>;

export const findProject = (db: Db, organizationId: string, ref: string): Promise<ProjectRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("projects")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export async function listProjects(
  db: Db,
  organizationId: string,
  onlyId: string | null,
  offset: number,
  limit: number,
): Promise<{ rows: ProjectRow[]; total: number }> {
  let q = db.selectFrom("projects").where("organization_id", "=", organizationId);
  if (onlyId) q = q.where("id", "=", onlyId);
  const rows = await q.selectAll().orderBy("created_at").orderBy("id").offset(offset).limit(limit).execute();
  const count = await q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

export const insertProject = (db: Db, row: Insertable<ProjectsTable>) =>
  db.insertInto("projects").values(row).execute();

export const updateProject = (db: Db, id: string, patch: Updateable<ProjectsTable>) =>
  db.updateTable("projects").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteProject = (db: Db, id: string) => db.deleteFrom("projects").where("id", "=", id).execute();
