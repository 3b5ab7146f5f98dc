import { duplicate, invalid } from "../../lib/errors.ts";
import { toJson } from "../../lib/json.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import { findInstanceByKey, type InstanceWithKeys } from "./facts.repo.ts";
import { instanceChange, instanceDeleteChange, insertInstance, Resolver } from "./facts-write.ts";
import { deleteInstances, updateInstance } from "./resource-instances.repo.ts";
import type { ResourceInstanceCreate } from "./facts.schemas.ts";

/**
 * Resource instance records inside the caller's transaction, shared by the modules that write instances:
 * resource-instances and bulk.
 */

/**
 * Creates or (same resource and key) updates instances inside the caller's transaction. `onExisting: "fail"`
 * answers 409; "update" replaces the attributes. An instance never moves to another tenant: that is a 422.
 */
export async function writeInstanceRecords(
  resolver: Resolver,
  inputs: ResourceInstanceCreate[],
  changes: Change[],
  onExisting: "fail" | "update",
  loc: (string | number)[] = ["body"],
): Promise<{ row: InstanceWithKeys; created: boolean }[]> {
  const out: { row: InstanceWithKeys; created: boolean }[] = [];
  const seen = new Set<string>();
  for (const [i, input] of inputs.entries()) {
    const at = inputs.length > 1 ? [...loc, i] : loc;
    const resource = await resolver.requireResource(input.resource);
    const tenant = await resolver.requireTenant(input.tenant);
    const name = `${resource.key}:${input.key}`;
    if (seen.has(name)) throw invalid(`resource instance '${name}' appears twice`, at);
    seen.add(name);
    let existing = await findInstanceByKey(resolver.db, resolver.env.id, resource.id, input.key);
    if (!existing) {
      const row = await insertInstance(
        resolver,
        { resource, tenant, key: input.key, attributes: input.attributes },
        changes,
      );
      if (row) {
        out.push({ row, created: true });
        continue;
      }
      // A concurrent request created it since the lookup: this one comes second, as if it had been sent later.
      existing = await findInstanceByKey(resolver.db, resolver.env.id, resource.id, input.key);
      if (!existing) throw duplicate("resource instance", name);
    }
    if (onExisting === "fail") throw duplicate("resource instance", name);
    if (existing.tenant_id !== tenant.id) {
      throw invalid(
        `resource instance '${name}' belongs to tenant '${existing.tenant_key}'; it cannot move to '${tenant.key}'`,
        [...at, "tenant"],
      );
    }
    const updated = await updateInstance(resolver.db, resolver.env.id, existing.id, {
      attributes: toJson(input.attributes),
      updated_at: now(),
    });
    const row = { ...existing, ...updated };
    changes.push(instanceChange(row));
    out.push({ row, created: false });
  }
  return out;
}

/** Deletes instances (with their tuples and role assignments) inside the caller's transaction. */
export async function deleteInstanceRecords(
  resolver: Resolver,
  instances: InstanceWithKeys[],
  changes: Change[],
): Promise<void> {
  await deleteInstances(
    resolver.db,
    resolver.env.id,
    instances.map((i) => i.id),
  );
  for (const instance of instances) changes.push(instanceDeleteChange(instance));
  resolver.forget();
}
