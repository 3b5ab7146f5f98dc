import type { Db } from "../../db/db.ts";
import type { RelationWithKeys } from "../../domain/schema/relations.repo.ts";

const relationsWithKeys = (db: Db, envId: string) =>
  db
    .selectFrom("relations as rel")
    .innerJoin("resources as s", "s.id", "rel.subject_resource_id")
    .innerJoin("resources as o", "o.id", "rel.object_resource_id")
    .selectAll("rel")
    .select(["s.key as subject_key", "o.key as object_key"])
    .where("rel.environment_id", "=", envId);

export const findRelationWithKeys = (
  db: Db,
  envId: string,
  id: string,
): Promise<RelationWithKeys | undefined> =>
  relationsWithKeys(db, envId).where("rel.id", "=", id).executeTakeFirst();

export async function listRelationsPage(
  db: Db,
  envId: string,
  objectResourceId: string,
  offset: number,
  limit: number,
): Promise<{ rows: RelationWithKeys[]; total: number }> {
  const rows = await relationsWithKeys(db, envId)
    .where("rel.object_resource_id", "=", objectResourceId)
    .orderBy("rel.created_at")
    .orderBy("rel.key")
    .offset(offset)
    .limit(limit)
    .execute();
  const count = await db
    .selectFrom("relations")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("environment_id", "=", envId)
    .where("object_resource_id", "=", objectResourceId)
    .executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}
