import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { AppError } from "../../lib/errors.ts";
import { fromJsonObject } from "../../lib/json.ts";
import { factLists, type PageRequest } from "../../lib/pagination.ts";
import { filteredPage } from "../../domain/facts/list-pages.repo.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { instanceName } from "../../domain/facts/facts.repo.ts";
import { Resolver, writeFacts, writeFactsInBulk, type Env } from "../../domain/facts/facts-write.ts";
import {
  createTupleRecords,
  detailsOf,
  requireRelation,
  tupleChange,
} from "../../domain/facts/tuple-records.ts";
import {
  countTuples,
  deleteTuples,
  findTuple,
  listTuplesQuery,
  relationIdsByRef,
  type TupleFilter,
  type TupleWithKeys,
} from "./relationship-tuples.repo.ts";
import type {
  RelationshipTupleCreate,
  RelationshipTupleDelete,
  RelationshipTupleListQuery,
  RelationshipTupleRead,
} from "./relationship-tuples.schemas.ts";

export function tupleRead(t: TupleWithKeys, detailed: boolean): RelationshipTupleRead {
  return {
    id: t.id,
    subject: `${t.subject_type}:${t.subject_key}`,
    relation: t.relation_key,
    object: `${t.object_type}:${t.object_key}`,
    tenant: t.tenant_key,
    subject_id: t.subject_id,
    relation_id: t.relation_id,
    object_id: t.object_id,
    tenant_id: t.tenant_id,
    organization_id: t.organization_id,
    project_id: t.project_id,
    environment_id: t.environment_id,
    created_at: t.created_at,
    updated_at: t.updated_at,
    ...(detailed && {
      subject_details: {
        key: t.subject_key,
        tenant: t.subject_tenant,
        resource: t.subject_type,
        attributes: fromJsonObject(t.subject_attributes),
      },
      relation_details: { key: t.relation_key, name: t.relation_name },
      object_details: {
        key: t.object_key,
        tenant: t.object_tenant,
        resource: t.object_type,
        attributes: fromJsonObject(t.object_attributes),
      },
      tenant_details: {
        key: t.tenant_key,
        name: t.tenant_name,
        attributes: fromJsonObject(t.tenant_attributes),
      },
    }),
  };
}

/** Deletes tuples inside the caller's transaction; each must exist (404 naming the first that does not). */
export async function deleteTupleRecords(
  resolver: Resolver,
  idents: RelationshipTupleDelete[],
  changes: Change[],
): Promise<void> {
  const ids: string[] = [];
  for (const ident of idents) {
    const subject = await resolver.requireInstance(ident.subject);
    const object = await resolver.requireInstance(ident.object);
    const objectResource = await resolver.requireResource(object.resource_id);
    const relation = await requireRelation(resolver, objectResource, ident.relation);
    const row = await findTuple(resolver.db, resolver.env.id, subject.id, relation.id, object.id);
    const name = `${instanceName(subject)} ${relation.key} ${instanceName(object)}`;
    if (!row || ids.includes(row.id)) {
      throw new AppError("NOT_FOUND", `relationship tuple '${name}' was not found`, {
        object: "relationship tuple",
        ref: name,
      });
    }
    ids.push(row.id);
    const tenant = await resolver.requireTenant(row.tenant_id);
    changes.push(tupleChange({ ...row, ...detailsOf(subject, object, relation, tenant) }, "delete"));
  }
  await deleteTuples(resolver.db, resolver.env.id, ids);
}

export function createRelationshipTuplesService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  /** Filters to ids; null when something named does not exist, so nothing can match. */
  async function resolveFilter(env: Env, q: RelationshipTupleListQuery): Promise<TupleFilter | null> {
    const resolver = new Resolver(readDb, env);
    const filter: TupleFilter = {};
    if (q.tenant !== undefined) {
      const tenant = await resolver.tenant(q.tenant);
      if (!tenant) return null;
      filter.tenantId = tenant.id;
    }
    for (const side of ["subject", "object"] as const) {
      const ref = q[side];
      if (ref === undefined) continue;
      const rows = await resolver.instanceMatches(ref);
      if (rows.length !== 1 || !rows[0]) return null;
      filter[side === "subject" ? "subjectId" : "objectId"] = rows[0].id;
    }
    for (const side of ["subject_type", "object_type"] as const) {
      const ref = q[side];
      if (ref === undefined) continue;
      const resource = await resolver.resource(ref);
      if (!resource) return null;
      filter[side === "subject_type" ? "subjectTypeId" : "objectTypeId"] = resource.id;
    }
    if (q.relation !== undefined) {
      filter.relationIds = await relationIdsByRef(readDb, env.id, q.relation);
      if (filter.relationIds.length === 0) return null;
    }
    return filter;
  }

  async function page(env: Env, q: RelationshipTupleListQuery, p: PageRequest, detailed: boolean) {
    const { rows, total } = await filteredPage(
      readDb,
      "relationship_tuples",
      env.id,
      p,
      await resolveFilter(env, q),
      {
        rows: (db, envId, f, offset, limit, after) =>
          listTuplesQuery(db, envId, f, offset, limit, after).execute(),
        count: countTuples,
      },
    );
    return { data: rows.map((r) => tupleRead(r, detailed)), total };
  }

  return {
    ...factLists<EnvScope, RelationshipTupleListQuery, RelationshipTupleRead>(page),

    async create({ environment }: EnvScope, input: RelationshipTupleCreate): Promise<RelationshipTupleRead> {
      const [written] = await writeFacts(db, environment, (resolver, changes) =>
        createTupleRecords(resolver, [input], changes, "fail"),
      );
      if (!written) throw new Error("tuple not written");
      return tupleRead(written, false);
    },

    async remove({ environment }: EnvScope, input: RelationshipTupleDelete): Promise<void> {
      await writeFacts(db, environment, (resolver, changes) =>
        deleteTupleRecords(resolver, [input], changes),
      );
    },

    /** All or nothing; a tuple that already exists is left as it is. */
    async bulkCreate(
      { environment }: EnvScope,
      inputs: RelationshipTupleCreate[],
    ): Promise<Record<string, never>> {
      await writeFactsInBulk(db, environment, (resolver, changes) =>
        createTupleRecords(resolver, inputs, changes, "skip", ["body", "operations"]),
      );
      return {};
    },

    /** All or nothing: one tuple that does not exist deletes none. */
    async bulkDelete(
      { environment }: EnvScope,
      idents: RelationshipTupleDelete[],
    ): Promise<Record<string, never>> {
      await writeFactsInBulk(db, environment, (resolver, changes) =>
        deleteTupleRecords(resolver, idents, changes),
      );
      return {};
    },
  };
}

export type RelationshipTuplesService = ReturnType<typeof createRelationshipTuplesService>;
