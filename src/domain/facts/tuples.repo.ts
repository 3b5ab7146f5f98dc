import type { Insertable, Selectable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { RelationshipTuplesTable } from "../../db/types.ts";

/** The tuple rows that tuple-records.ts writes; the relationship tuples module reads and lists them. */

export type TupleRow = Selectable<RelationshipTuplesTable>;

/** A tuple with everything its (detailed) read shows. */
export interface TupleWithKeys extends TupleRow {
  subject_type: string;
  subject_key: string;
  subject_tenant: string;
  subject_attributes: string | null;
  object_type: string;
  object_key: string;
  object_tenant: string;
  object_attributes: string | null;
  relation_key: string;
  relation_name: string;
  tenant_key: string;
  tenant_name: string;
  tenant_attributes: string | null;
}

/**
 * Inserts a tuple unless it exists; false when it does, also when a transaction that committed after this one
 * looked wrote it (the insert waits for that transaction).
 */
export async function insertTupleIfNew(db: Db, row: Insertable<RelationshipTuplesTable>): Promise<boolean> {
  const result = await db
    .insertInto("relationship_tuples")
    .values(row)
    .onConflict((oc) => oc.columns(["environment_id", "subject_id", "relation_id", "object_id"]).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Tuples joined to their subject's and object's instance and resource (s, sr, o, orr) and their relation (rel). */
export const tuplesJoined = (db: Db) =>
  db
    .selectFrom("relationship_tuples as rt")
    .innerJoin("resource_instances as s", "s.id", "rt.subject_id")
    .innerJoin("resources as sr", "sr.id", "s.resource_id")
    .innerJoin("resource_instances as o", "o.id", "rt.object_id")
    .innerJoin("resources as orr", "orr.id", "o.resource_id")
    .innerJoin("relations as rel", "rel.id", "rt.relation_id");
