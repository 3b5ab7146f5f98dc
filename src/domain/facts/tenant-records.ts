import { isUniqueViolation } from "../../db/errors.ts";
import { duplicate } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { namedColumns } from "../../lib/patch.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { TenantRow } from "./facts.repo.ts";
import { instanceDeleteChange, Resolver, scopedIds, tenantChange, type Env } from "./facts-write.ts";
import { deleteTenants, insertTenants, instancesOfTenants } from "./tenants.repo.ts";
import type { TenantCreate } from "./facts.schemas.ts";

/**
 * Tenant records inside the caller's transaction, shared by the modules that create or delete tenants:
 * tenants and bulk.
 */

export function newTenantRow(env: Env, input: TenantCreate): TenantRow {
  const at = now();
  return {
    id: newId(),
    ...scopedIds(env),
    ...namedColumns(input, at),
    last_action_at: at,
  };
}

/** Inserts new tenants inside the caller's transaction; one existing key (or a repeated one) is a 409. */
export async function createTenantRecords(
  resolver: Resolver,
  inputs: TenantCreate[],
  changes: Change[],
): Promise<TenantRow[]> {
  const seen = new Set<string>();
  for (const input of inputs) {
    if (seen.has(input.key) || (await resolver.tenant(input.key))) throw duplicate("tenant", input.key);
    seen.add(input.key);
  }
  const rows = inputs.map((input) => newTenantRow(resolver.env, input));
  try {
    await insertTenants(resolver.db, rows);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate("tenant", inputs.map((i) => i.key).join(", "));
    throw e;
  }
  for (const row of rows) {
    resolver.remember("tenant", row.key, row);
    changes.push(tenantChange(row));
  }
  return rows;
}

/**
 * Deletes tenants with everything in them. The feed gets the deleted instances (whose tuples and roles the engine
 * drops with them) and then the tenants.
 */
export async function deleteTenantRecords(
  resolver: Resolver,
  tenants: TenantRow[],
  changes: Change[],
): Promise<void> {
  const ids = tenants.map((t) => t.id);
  for (const instance of await instancesOfTenants(resolver.db, resolver.env.id, ids)) {
    changes.push(instanceDeleteChange(instance));
  }
  await deleteTenants(resolver.db, resolver.env.id, ids);
  for (const t of tenants) changes.push({ kind: "tenant", op: "delete", data: { key: t.key } });
  resolver.forget();
}
