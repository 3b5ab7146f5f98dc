import type { Insertable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { RelationsTable } from "../../db/types.ts";
import type { RelationRow } from "./schema.repo.ts";

/** The relation reads and writes of relation-records.ts; the relations module uses them too. */

export type RelationWithKeys = RelationRow & { subject_key: string; object_key: string };

export const listRelationsOf = (db: Db, envId: string, objectResourceId: string): Promise<RelationRow[]> =>
  db
    .selectFrom("relations")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("object_resource_id", "=", objectResourceId)
    .execute();

export const insertRelation = (db: Db, row: Insertable<RelationsTable>) =>
  db.insertInto("relations").values(row).execute();

export const deleteRelations = async (db: Db, ids: string[]): Promise<void> => {
  if (ids.length > 0) await db.deleteFrom("relations").where("id", "in", ids).execute();
};
