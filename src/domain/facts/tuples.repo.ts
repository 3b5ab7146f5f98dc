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
