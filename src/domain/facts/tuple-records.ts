import { AppError, invalid, notFoundOn } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import {
  findRelation,
  instanceName,
  parseInstanceRef,
  type InstanceWithKeys,
  type RelationRow,
  type ResourceRow,
  type TenantRow,
} from "./facts.repo.ts";
import { instanceOrCreate, Resolver, scopedIds } from "./facts-write.ts";
import { insertTupleIfNew, type TupleWithKeys } from "./tuples.repo.ts";

/** Tuple records inside the caller's transaction, shared by the relationship tuples module and policy files. */

export interface TupleInput {
  subject: string;
  relation: string;
  object: string;
  tenant?: string | undefined;
}

export const tupleChange = (t: TupleWithKeys, op: "upsert" | "delete"): Change => {
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

export async function requireRelation(
  resolver: Resolver,
  object: ResourceRow,
  ref: string,
): Promise<RelationRow> {
  const relation = await findRelation(resolver.db, resolver.env.id, object.id, ref);
  if (!relation) {
    throw notFoundOn("relation", ref, object);
  }
  return relation;
}

export const detailsOf = (
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
  inputs: TupleInput[],
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
