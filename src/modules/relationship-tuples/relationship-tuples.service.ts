import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { AppError, invalid, notFoundOn } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject } from "../../lib/json.ts";
import { factLists, type PageRequest } from "../../lib/pagination.ts";
import { filteredPage } from "../../domain/facts/list-pages.repo.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import {
  findRelation,
  instanceName,
  parseInstanceRef,
  type InstanceWithKeys,
  type RelationRow,
  type ResourceRow,
  type TenantRow,
} from "../../domain/facts/facts.repo.ts";
import {
  instanceOrCreate,
  Resolver,
  scopedIds,
  writeFacts,
  type Env,
} from "../../domain/facts/facts-write.ts";
import {
  countTuples,
  deleteTuples,
  findTuple,
  insertTupleIfNew,
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

const tupleChange = (t: TupleWithKeys, op: "upsert" | "delete"): Change => {
  const data = {
    subject: `${t.subject_type}:${t.subject_key}`,
    relation: t.relation_key,
    object: `${t.object_type}:${t.object_key}`,
  };
  return op === "upsert"
    ? { kind: "relationship_tuple", op, data: { ...data, tenant: t.tenant_key } }
    : { kind: "relationship_tuple", op, data };
};

/** The resource type of an instance reference: the existing instance's, or the `type` it names. */
async function resourceOf(
  resolver: Resolver,
  ref: string,
  existing: InstanceWithKeys | undefined,
): Promise<ResourceRow> {
  if (existing) return resolver.requireResource(existing.resource_id);
  const parsed = parseInstanceRef(ref);
  if ("type" in parsed) return resolver.requireResource(parsed.type);
  throw new AppError("NOT_FOUND", `resource instance '${ref}' was not found; name a new one as 'type:key'`, {
    object: "resource instance",
    ref,
  });
}

async function requireRelation(resolver: Resolver, object: ResourceRow, ref: string): Promise<RelationRow> {
  const relation = await findRelation(resolver.db, resolver.env.id, object.id, ref);
  if (!relation) {
    throw notFoundOn("relation", ref, object);
  }
  return relation;
}

const detailsOf = (
  subject: InstanceWithKeys,
  object: InstanceWithKeys,
  relation: RelationRow,
  tenant: TenantRow,
) => ({
  subject_type: subject.resource_key,
  subject_key: subject.key,
  subject_tenant: subject.tenant_key,
  subject_attributes: subject.attributes,
  object_type: object.resource_key,
  object_key: object.key,
  object_tenant: object.tenant_key,
  object_attributes: object.attributes,
  relation_key: relation.key,
  relation_name: relation.name,
  tenant_key: tenant.key,
  tenant_name: tenant.name,
  tenant_attributes: tenant.attributes,
});

/**
 * Writes tuples inside the caller's transaction. The relation must be one of the object's resource and its
 * subject resource must be the subject's; instances that do not exist yet are created in the tuple's tenant
 * (the body's, else the existing instance's). `onExisting: "fail"` answers 409 for a tuple that exists.
 */
export async function createTupleRecords(
  resolver: Resolver,
  inputs: RelationshipTupleCreate[],
  changes: Change[],
  onExisting: "fail" | "skip",
  loc: (string | number)[] = ["body"],
): Promise<TupleWithKeys[]> {
  const written: TupleWithKeys[] = [];
  const seen = new Set<string>();
  for (const [i, input] of inputs.entries()) {
    const at = loc.length > 1 ? [...loc, i] : loc;
    const given = input.tenant !== undefined ? await resolver.requireTenant(input.tenant) : undefined;
    const subjectNow = await resolver.instance(input.subject);
    const objectNow = await resolver.instance(input.object);
    const objectResource = await resourceOf(resolver, input.object, objectNow);
    const subjectResource = await resourceOf(resolver, input.subject, subjectNow);
    const relation = await requireRelation(resolver, objectResource, input.relation);
    if (relation.subject_resource_id !== subjectResource.id) {
      const expected = await resolver.requireResource(relation.subject_resource_id);
      throw invalid(
        `relation '${relation.key}' of resource '${objectResource.key}' takes subjects of type '${expected.key}', not '${subjectResource.key}'`,
        [...at, "subject"],
      );
    }
    let tenant = given;
    if (!tenant) {
      const tenantId = objectNow?.tenant_id ?? subjectNow?.tenant_id;
      if (!tenantId) {
        throw invalid("tenant is required when the subject and the object do not exist yet", [
          ...at,
          "tenant",
        ]);
      }
      tenant = await resolver.requireTenant(tenantId);
    }
    const subject =
      subjectNow ??
      (await instanceOrCreate(resolver, input.subject, tenant, changes, [...at, "subject"])).instance;
    const object =
      objectNow ??
      (await instanceOrCreate(resolver, input.object, tenant, changes, [...at, "object"])).instance;
    // Also for an instance that a concurrent request created since the lookup, in whatever tenant.
    for (const [side, instance] of [
      ["subject", subject],
      ["object", object],
    ] as const) {
      if (instance.tenant_id !== tenant.id) {
        throw invalid(
          `${side} '${instanceName(instance)}' belongs to tenant '${instance.tenant_key}', not '${tenant.key}'`,
          [...at, side],
        );
      }
    }
    const identity = `${subject.id}\u0000${relation.id}\u0000${object.id}`;
    if (seen.has(identity)) continue;
    seen.add(identity);
    const at_ = now();
    const row = {
      id: newId(),
      ...scopedIds(resolver.env),
      subject_id: subject.id,
      relation_id: relation.id,
      object_id: object.id,
      tenant_id: tenant.id,
      created_at: at_,
      updated_at: at_,
    };
    if (!(await insertTupleIfNew(resolver.db, row))) {
      if (onExisting === "skip") continue;
      const name = `${instanceName(subject)} ${relation.key} ${instanceName(object)}`;
      throw new AppError("DUPLICATE_ENTITY", `relationship tuple '${name}' already exists`, {
        object: "relationship tuple",
        key: name,
      });
    }
    const full: TupleWithKeys = { ...row, ...detailsOf(subject, object, relation, tenant) };
    changes.push(tupleChange(full, "upsert"));
    written.push(full);
  }
  return written;
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
      await writeFacts(db, environment, (resolver, changes) =>
        createTupleRecords(resolver, inputs, changes, "skip", ["body", "operations"]),
      );
      return {};
    },

    /** All or nothing: one tuple that does not exist deletes none. */
    async bulkDelete(
      { environment }: EnvScope,
      idents: RelationshipTupleDelete[],
    ): Promise<Record<string, never>> {
      await writeFacts(db, environment, (resolver, changes) => deleteTupleRecords(resolver, idents, changes));
      return {};
    },
  };
}

export type RelationshipTuplesService = ReturnType<typeof createRelationshipTuplesService>;
