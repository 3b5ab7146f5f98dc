import { chunks, pool, type Api } from "./http.ts";
import type { PdpDataset } from "./pdp-dataset.ts";

export const SCHEMA = "/v2/schema/default/production";
export const FACTS = "/v2/facts/default/production";

/** Loads the PDP dataset through the public API (bulk endpoints for the facts, 1,000 a request). */
export async function seedPdpDataset(api: Api, d: PdpDataset, log: (m: string) => void): Promise<void> {
  for (const r of d.resources) await api.call("POST", `${SCHEMA}/resources`, r);
  for (const r of d.tenantRoles) await api.call("POST", `${SCHEMA}/roles`, r);
  for (const c of d.conditionSets) await api.call("POST", `${SCHEMA}/condition_sets`, c);
  for (const r of d.setRules) await api.call("POST", `${FACTS}/set_rules`, r);
  for (const part of chunks(d.tenants, 1000)) {
    await api.call("POST", `${FACTS}/bulk/tenants`, { operations: part.map((key) => ({ key, name: key })) });
  }
  const users = d.users.map((u) => ({ key: u.key, attributes: u.attributes }));
  await pool(chunks(users, 1000), 2, (part) => api.call("PUT", `${FACTS}/bulk/users`, { operations: part }));
  log(`${d.users.length} users`);
  await pool(chunks(d.tenantAssignments, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/role_assignments/bulk`, part),
  );
  log(`${d.tenantAssignments.length} tenant role assignments`);
  await pool(chunks(d.tuples, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/relationship_tuples/bulk`, { operations: part }),
  );
  log(`${d.tuples.length} relationship tuples`);
  await pool(chunks(d.instanceAssignments, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/role_assignments/bulk`, part),
  );
  log(`${d.instanceAssignments.length} instance role assignments`);
}
