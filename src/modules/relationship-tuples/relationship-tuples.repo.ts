import type { Db } from "../../db/db.ts";
import { inChunks } from "../../domain/facts/facts.repo.ts";
import { seekAfter, type ListKey } from "../../domain/facts/list-pages.repo.ts";
import type { TupleRow } from "../../domain/facts/tuples.repo.ts";

export type { TupleRow, TupleWithKeys } from "../../domain/facts/tuples.repo.ts";

export interface TupleFilter {
  tenantId?: string | undefined;
  subjectId?: string | undefined;
  objectId?: string | undefined;
  /** A relation key can name relations of several resources. */
  relationIds?: string[] | undefined;
  subjectTypeId?: string | undefined;
  objectTypeId?: string | undefined;
}

function filtered(db: Db, envId: string, f: TupleFilter) {
  let q = db.selectFrom("relationship_tuples as rt").where("rt.environment_id", "=", envId);
  if (f.tenantId) q = q.where("rt.tenant_id", "=", f.tenantId);
  if (f.subjectId) q = q.where("rt.subject_id", "=", f.subjectId);
  if (f.objectId) q = q.where("rt.object_id", "=", f.objectId);
  if (f.relationIds) q = q.where("rt.relation_id", "in", f.relationIds);
  const ofType = (column: "rt.subject_id" | "rt.object_id", resourceId: string) =>
    q.where(column, "in", (eb) =>
      eb
        .selectFrom("resource_instances as fri")
        .select("fri.id")
        .where("fri.environment_id", "=", envId)
        .where("fri.resource_id", "=", resourceId),
    );
  if (f.subjectTypeId) q = ofType("rt.subject_id", f.subjectTypeId);
  if (f.objectTypeId) q = ofType("rt.object_id", f.objectTypeId);
  return q;
}

export const withKeys = (db: Db, envId: string, f: TupleFilter) =>
  filtered(db, envId, f)
    .innerJoin("resource_instances as s", "s.id", "rt.subject_id")
    .innerJoin("resources as sr", "sr.id", "s.resource_id")
    .innerJoin("tenants as st", "st.id", "s.tenant_id")
    .innerJoin("resource_instances as o", "o.id", "rt.object_id")
    .innerJoin("resources as orr", "orr.id", "o.resource_id")
    .innerJoin("tenants as ot", "ot.id", "o.tenant_id")
    .innerJoin("relations as rel", "rel.id", "rt.relation_id")
    .innerJoin("tenants as t", "t.id", "rt.tenant_id")
    .selectAll("rt")
    .select([
      "sr.key as subject_type",
      "s.key as subject_key",
      "st.key as subject_tenant",
      "s.attributes as subject_attributes",
      "orr.key as object_type",
      "o.key as object_key",
      "ot.key as object_tenant",
      "o.attributes as object_attributes",
      "rel.key as relation_key",
      "rel.name as relation_name",
      "t.key as tenant_key",
      "t.name as tenant_name",
      "t.attributes as tenant_attributes",
    ]);

export const listTuplesQuery = (
  db: Db,
  envId: string,
  f: TupleFilter,
  offset: number,
  limit: number,
  after?: ListKey,
) =>
  withKeys(db, envId, f)
    .where(seekAfter("rt", after))
    .orderBy("rt.created_at")
    .orderBy("rt.id")
    .offset(offset)
    .limit(limit);

export async function countTuples(db: Db, envId: string, f: TupleFilter): Promise<number> {
  const row = await filtered(db, envId, f)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export const findTuple = (
  db: Db,
  envId: string,
  subjectId: string,
  relationId: string,
  objectId: string,
): Promise<TupleRow | undefined> =>
  db
    .selectFrom("relationship_tuples")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("subject_id", "=", subjectId)
    .where("relation_id", "=", relationId)
    .where("object_id", "=", objectId)
    .executeTakeFirst();

export const deleteTuples = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db
      .deleteFrom("relationship_tuples")
      .where("environment_id", "=", envId)
      .where("id", "in", slice)
      .execute(),
  );

/** Relations named by a key (on any resource) or an id. */
export const relationIdsByRef = async (db: Db, envId: string, ref: string): Promise<string[]> => {
  const rows = await db
    .selectFrom("relations")
    .select("id")
    .where("environment_id", "=", envId)
    .where((eb) => eb.or([eb("key", "=", ref), eb("id", "=", ref.toLowerCase())]))
    .execute();
  return rows.map((r) => r.id);
};
