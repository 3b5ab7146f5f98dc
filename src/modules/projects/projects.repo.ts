import type { Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ProjectsTable } from "../../db/types.ts";
import type { ProjectRow } from "../../domain/project-records.ts";

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

export const updateProject = (db: Db, id: string, patch: Updateable<ProjectsTable>) =>
  db.updateTable("projects").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteProject = (db: Db, id: string) => db.deleteFrom("projects").where("id", "=", id).execute();
