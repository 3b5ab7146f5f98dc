import type { Db } from "../../db/db.ts";
import { tuplesJoined } from "../../domain/facts/tuples.repo.ts";
import { instancesWithKeys } from "../../domain/facts/facts.repo.ts";
import { seekAfter, type ListKey } from "../../domain/facts/list-pages.repo.ts";

export interface InstanceFilter {
  tenantId?: string | undefined;
  resourceId?: string | undefined;
  /** Keys or ids, any of which may match. */
  search?: { keys: string[]; ids: string[] } | undefined;
}

function filtered(db: Db, envId: string, f: InstanceFilter) {
  let q = instancesWithKeys(db, envId);
  if (f.tenantId) q = q.where("ri.tenant_id", "=", f.tenantId);
  if (f.resourceId) q = q.where("ri.resource_id", "=", f.resourceId);
  if (f.search) {
    const { keys, ids } = f.search;
    q = q.where((eb) =>
      eb.or([
        ...(keys.length > 0 ? [eb("ri.key", "in", keys)] : []),
        ...(ids.length > 0 ? [eb("ri.id", "in", ids)] : []),
      ]),
    );
  }
  return q;
}

export const listInstancesQuery = (
  db: Db,
  envId: string,
  f: InstanceFilter,
  offset: number,
  limit: number,
  after?: ListKey,
) =>
  filtered(db, envId, f)
    .where(seekAfter("ri", after))
    .orderBy("ri.created_at")
    .orderBy("ri.id")
    .offset(offset)
    .limit(limit);

export async function countInstances(db: Db, envId: string, f: InstanceFilter): Promise<number> {
  const row = await filtered(db, envId, f)
    .clearSelect()
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface TupleOfInstance {
  subject_id: string;
  object_id: string;
  subject: string;
  relation: string;
  object: string;
}

/** The tuples each instance is the subject or the object of. */
export async function tuplesOfInstances(db: Db, envId: string, ids: string[]): Promise<TupleOfInstance[]> {
  if (ids.length === 0) return [];
  const base = () =>
    tuplesJoined(db)
      .select(["rt.subject_id", "rt.object_id", "sr.key as s_type", "s.key as s_key", "rel.key as relation"])
      .select(["orr.key as o_type", "o.key as o_key", "rt.created_at", "rt.id"])
      .where("rt.environment_id", "=", envId);
  const rows = [
    ...(await base().where("rt.subject_id", "in", ids).execute()),
    ...(await base().where("rt.object_id", "in", ids).execute()),
  ].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  const seen = new Set<string>();
  return rows.flatMap((r) => {
    if (seen.has(r.id)) return [];
    seen.add(r.id);
    return [
      {
        subject_id: r.subject_id,
        object_id: r.object_id,
        subject: `${r.s_type}:${r.s_key}`,
        relation: r.relation,
        object: `${r.o_type}:${r.o_key}`,
      },
    ];
  });
}
