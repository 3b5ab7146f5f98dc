import type { Db } from "../../db/db.ts";
import type { Dialect } from "../../db/store.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import { conditionSetData, resourceData, tenantRoleData } from "../../domain/schema/schema.changes.ts";
import { loadConditionSets, loadResourceGraphs, loadRoleGraphs } from "../../domain/schema/schema.repo.ts";
import {
  deleteByIds,
  deleteLinks,
  insertRows,
  listEngineObjectIds,
  listRuleKeys,
  POLICY_TABLES,
  updateRow,
} from "./environment-copy.repo.ts";
import type { CopyPlan } from "./environment-copy.plan.ts";

/** Writing a planned copy and the change records that follow it: shared by the copy and policy files' apply. */

const chunks = <T>(items: T[], size: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
};

export async function applyPlan(
  trx: Db,
  dialect: Dialect,
  envId: string,
  plan: CopyPlan,
  signal?: AbortSignal,
): Promise<void> {
  for (const table of [
    "relations",
    "roles",
    "action_groups",
    "resource_attributes",
    "resource_actions",
  ] as const) {
    await deleteByIds(trx, envId, table, plan.deletes[table]);
  }
  for (const table of [
    "action_group_actions",
    "role_permissions",
    "role_extends",
    "role_derivations",
  ] as const) {
    await deleteLinks(trx, envId, table, plan.clearLinks[table]);
  }
  for (const table of POLICY_TABLES) await insertRows(trx, dialect, table, plan.inserts[table], signal);
  for (const [i, u] of plan.updates.entries()) {
    if (i % 200 === 0) signal?.throwIfAborted();
    await updateRow(trx, envId, u.table, u.id, u.patch);
  }
  for (const p of plan.parents) {
    await updateRow(trx, envId, "condition_sets", p.id, { parent_id: p.parent_id, updated_at: now() });
  }
}

/**
 * The change records that make a PDP hold the target's policy as it now is: every resource, tenant role,
 * condition set and set rule (upserts replace whole objects), and deletes for the set rules that went away.
 */
export async function engineRecords(
  trx: Db,
  envId: string,
  rulesBefore: { user_set: string; permission: string; resource_set: string }[],
): Promise<Change[]> {
  const ids = await listEngineObjectIds(trx, envId);
  const records: Change[] = [];
  for (const chunk of chunks(ids.resources, 200)) {
    for (const graph of await loadResourceGraphs(trx, envId, chunk)) {
      records.push({ kind: "resource", op: "upsert", data: resourceData(graph) });
    }
  }
  for (const chunk of chunks(ids.tenantRoles, 500)) {
    for (const graph of await loadRoleGraphs(trx, envId, chunk)) {
      records.push({ kind: "role", op: "upsert", data: tenantRoleData(graph) });
    }
  }
  for (const chunk of chunks(ids.conditionSets, 500)) {
    for (const row of await loadConditionSets(trx, envId, chunk)) {
      records.push({ kind: "condition_set", op: "upsert", data: conditionSetData(row, row.resource_key) });
    }
  }
  const rulesAfter = await listRuleKeys(trx, envId);
  const ruleId = (r: (typeof rulesAfter)[number]) =>
    `${r.user_set}\u0000${r.permission}\u0000${r.resource_set}`;
  const remaining = new Set(rulesAfter.map(ruleId));
  for (const rule of rulesBefore) {
    if (!remaining.has(ruleId(rule))) records.push({ kind: "condition_set_rule", op: "delete", data: rule });
  }
  for (const rule of rulesAfter) records.push({ kind: "condition_set_rule", op: "upsert", data: rule });
  return records;
}
