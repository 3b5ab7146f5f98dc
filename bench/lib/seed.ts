import { chunks, pool, type Api } from "./http.ts";
import type { PdpDataset } from "./pdp-dataset.ts";

export const SCHEMA = "/v2/schema/default/production";
export const FACTS = "/v2/facts/default/production";

/** Loads the PDP dataset through the public API (bulk endpoints for the facts, 1,000 a request). */
export async function seedPdpDataset(
  api: Api,
  dataset: PdpDataset,
  log: (message: string) => void,
): Promise<void> {
  for (const resource of dataset.resources) await api.call("POST", `${SCHEMA}/resources`, resource);
  for (const role of dataset.tenantRoles) await api.call("POST", `${SCHEMA}/roles`, role);
  for (const set of dataset.conditionSets) await api.call("POST", `${SCHEMA}/condition_sets`, set);
  for (const rule of dataset.setRules) await api.call("POST", `${FACTS}/set_rules`, rule);
  for (const part of chunks(dataset.tenants, 1000)) {
    await api.call("POST", `${FACTS}/bulk/tenants`, { operations: part.map((key) => ({ key, name: key })) });
  }
  const users = dataset.users.map((user) => ({ key: user.key, attributes: user.attributes }));
  await pool(chunks(users, 1000), 2, (part) => api.call("PUT", `${FACTS}/bulk/users`, { operations: part }));
  log(`${dataset.users.length} users`);
  await pool(chunks(dataset.tenantAssignments, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/role_assignments/bulk`, part),
  );
  log(`${dataset.tenantAssignments.length} tenant role assignments`);
  await pool(chunks(dataset.tuples, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/relationship_tuples/bulk`, { operations: part }),
  );
  log(`${dataset.tuples.length} relationship tuples`);
  await pool(chunks(dataset.instanceAssignments, 1000), 2, (part) =>
    api.call("POST", `${FACTS}/role_assignments/bulk`, part),
  );
  log(`${dataset.instanceAssignments.length} instance role assignments`);
}
