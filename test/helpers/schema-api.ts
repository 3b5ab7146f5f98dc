import assert from "node:assert/strict";
import { readChangesAfter } from "../../src/changes/feed.ts";
import type {
  ConditionSetData,
  ResourceData,
  ResourceRoleData,
  TenantRoleData,
} from "../../src/pdp/engine/types.ts";
import type { Reply, SeededOrg, TestEnv } from "./app.ts";
import { validatePermitResponse } from "./permit-contract.ts";

/** Shared pieces of the schema API tests (/v2/schema/{proj_id}/{env_id}/...). */

/** `/v2/schema/{proj}/{env}` with uuids, as the SDK sends them. */
export const schemaUrl = (org: SeededOrg, env: "production" | "development" = "production"): string =>
  `/v2/schema/${org.projectId}/${org.envs[env]}`;

/** Asserts the body matches the response schema Permit documents for `{S}<suffix>`. */
export function assertPermit(method: string, suffix: string, status: number, body: unknown): void {
  const problems = validatePermitResponse(method, `/v2/schema/{proj_id}/{env_id}${suffix}`, status, body);
  assert.deepEqual(problems, [], JSON.stringify(body));
}

const SCHEMA_TABLES = [
  "resources",
  "resource_actions",
  "resource_attributes",
  "action_groups",
  "action_group_actions",
  "roles",
  "role_permissions",
  "role_extends",
  "relations",
  "role_derivations",
  "condition_sets",
  "condition_set_rules",
  "resource_instances",
  "relationship_tuples",
  "role_assignments",
] as const;

export async function revisionOf(env: TestEnv, environmentId: string): Promise<number> {
  const row = await env.store.db
    .selectFrom("environments")
    .select("revision")
    .where("id", "=", environmentId)
    .executeTakeFirstOrThrow();
  return Number(row.revision);
}

/** The environment's revision and the row count of every schema table, to prove a failed write left no trace. */
export async function schemaSnapshot(env: TestEnv, environmentId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = { revision: await revisionOf(env, environmentId) };
  for (const table of SCHEMA_TABLES) {
    const row = await env.store.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("environment_id", "=", environmentId)
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

/** Runs a write that must fail with `status` and change nothing (rows, revision); returns the reply. */
export async function expectRejected(
  env: TestEnv,
  environmentId: string,
  status: number,
  write: () => Promise<Reply>,
): Promise<Reply> {
  const before = await schemaSnapshot(env, environmentId);
  const res = await write();
  assert.equal(res.status, status, String(res.body));
  assert.equal(res.headers["x-gatehouse-revision"], undefined);
  assert.equal(typeof res.json?.error_code, "string", String(res.body));
  assert.equal(typeof res.json?.message, "string", String(res.body));
  assert.deepEqual(await schemaSnapshot(env, environmentId), before);
  return res;
}

/** The schema half of an environment as the engine sees it, by key. */
export interface SchemaState {
  resources: Record<string, ResourceData>;
  roles: Record<string, TenantRoleData>;
  conditionSets: Record<string, ConditionSetData>;
}

/**
 * Replays the environment's whole change feed with the plainest rules (an upsert replaces, a delete removes,
 * nothing cascades), so a feed that leaves out a consequence of a write shows up as stale state.
 */
export async function replayFeed(env: TestEnv, environmentId: string): Promise<SchemaState> {
  const state: SchemaState = { resources: {}, roles: {}, conditionSets: {} };
  const tables = {
    resource: state.resources,
    role: state.roles,
    condition_set: state.conditionSets,
  } as Record<string, Record<string, unknown>>;
  for (const change of await readChangesAfter(env.store.db, environmentId, 0, 100_000)) {
    const table = tables[change.kind];
    if (!table) continue;
    const key = (change.data as { key: string }).key;
    if (change.op === "upsert") table[key] = change.data;
    else delete table[key];
  }
  return state;
}

const sorted = (items: readonly string[] | undefined) => [...(items ?? [])].sort();

function normalRole(role: ResourceRoleData): ResourceRoleData {
  const rules = (role.granted_to?.users_with_role ?? []).map((r) => ({
    role: r.role,
    on_resource: r.on_resource,
    linked_by_relation: r.linked_by_relation,
    no_direct: Boolean(r.when?.no_direct_roles_on_object),
  }));
  const noDirect = Boolean(role.granted_to?.when?.no_direct_roles_on_object);
  return {
    permissions: sorted(role.permissions),
    extends: sorted(role.extends),
    ...((rules.length > 0 || noDirect) && {
      granted_to: {
        when: { no_direct_roles_on_object: noDirect },
        users_with_role: rules
          .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
          .map((r) => ({
            role: r.role,
            on_resource: r.on_resource,
            linked_by_relation: r.linked_by_relation,
            when: { no_direct_roles_on_object: r.no_direct },
          })),
      },
    }),
  };
}

/** ResourceData with lists sorted and defaults spelled out, so two descriptions of one state compare equal. */
export function normalResource(data: ResourceData): ResourceData {
  return {
    key: data.key,
    actions: sorted(data.actions),
    attributes: Object.fromEntries(
      Object.entries(data.attributes ?? {}).map(([k, a]) => [
        k,
        { type: a.type, ...(a.description !== undefined && { description: a.description }) },
      ]),
    ),
    action_groups: Object.fromEntries(
      Object.entries(data.action_groups ?? {}).map(([k, v]) => [k, sorted(v)]),
    ),
    roles: Object.fromEntries(Object.entries(data.roles ?? {}).map(([k, r]) => [k, normalRole(r)])),
    relations: { ...data.relations },
  };
}

/** What GET of a resource says, in the engine's terms. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function resourceDataOfRead(read: any): ResourceData {
  return normalResource({
    key: read.key,
    actions: Object.keys(read.actions),
    attributes: Object.fromEntries(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      Object.entries(read.attributes as Record<string, any>).map(([k, a]) => [
        k,
        { type: a.type, ...(a.description !== undefined && { description: a.description }) },
      ]),
    ),
    action_groups: read.action_groups,
    roles: Object.fromEntries(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      Object.entries(read.roles as Record<string, any>).map(([k, r]) => [
        k,
        { permissions: r.permissions, extends: r.extends, granted_to: r.granted_to },
      ]),
    ),
    relations: Object.fromEntries(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      Object.entries(read.relations as Record<string, any>).map(([k, r]) => [k, r.resource]),
    ),
  });
}

/**
 * Asserts the replayed feed describes exactly what the API reads back: every resource (built-in ones included),
 * every tenant role and every condition set, with nothing extra.
 */
export async function assertFeedMatchesApi(
  env: TestEnv,
  org: SeededOrg,
  envName: "production" | "development",
) {
  const url = schemaUrl(org, envName);
  const state = await replayFeed(env, org.envs[envName]);
  const resources = await env.call(
    org.adminKey,
    "GET",
    `${url}/resources?include_built_in=true&per_page=100`,
  );
  assert.equal(resources.status, 200);
  assert.deepEqual(
    Object.fromEntries(Object.entries(state.resources).map(([k, r]) => [k, normalResource(r)])),
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    Object.fromEntries(resources.json.map((r: any) => [r.key, resourceDataOfRead(r)])),
  );
  const roles = await env.call(org.adminKey, "GET", `${url}/roles?per_page=100`);
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(state.roles).map(([k, r]) => [
        k,
        { key: r.key, permissions: sorted(r.permissions), extends: sorted(r.extends) },
      ]),
    ),
    Object.fromEntries(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      roles.json.map((r: any) => [
        r.key,
        { key: r.key, permissions: sorted(r.permissions), extends: sorted(r.extends) },
      ]),
    ),
  );
  const sets = await env.call(org.adminKey, "GET", `${url}/condition_sets?per_page=100`);
  assert.deepEqual(
    state.conditionSets,
    Object.fromEntries(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      sets.json.map((s: any) => [
        s.key,
        { key: s.key, type: s.type, resource: s.resource?.key ?? null, conditions: s.conditions },
      ]),
    ),
  );
}
