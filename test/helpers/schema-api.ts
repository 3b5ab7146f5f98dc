import assert from "node:assert/strict";
import { readChangesAfter } from "./changes.ts";
import type {
  ConditionSetData,
  ResourceData,
  ResourceRoleData,
  TenantRoleData,
} from "../../src/pdp/engine/types.ts";
import type { Reply, SeededOrg, TestEnv } from "./app.ts";
import { countsOf, revisionOf } from "./facts.ts";
import { validatePermitResponse } from "./permit-contract.ts";

export { revisionOf };

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

/** The environment's revision and the row count of every schema table, to prove a failed write left no trace. */
export const schemaSnapshot = (env: TestEnv, environmentId: string): Promise<Record<string, number>> =>
  countsOf(env, environmentId, SCHEMA_TABLES);

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

/*
 * Factories for tests that build a policy through the API, as a user would: folders holding documents (relation
 * `parent`), an editor of a folder an editor of its documents, tenants t1 and t2, and a set rule.
 */

/** Sends one write and asserts it succeeded (each test passes its own, bound to its key and app). */
export type ApiWrite = (method: "POST", url: string, body: unknown) => Promise<unknown>;

const actionsOf = (keys: string[]): Record<string, object> => Object.fromEntries(keys.map((k) => [k, {}]));

const editorOf = { name: "Editor", permissions: ["read", "write"] };

/** Role `role` of the document, granted to whoever has `role` on its parent folder. */
export const derivedFromFolder = (role: string, permissions: string[]) => ({
  name: role[0]!.toUpperCase() + role.slice(1),
  permissions,
  granted_to: { users_with_role: [{ role, on_resource: "folder", linked_by_relation: "parent" }] },
});

/** The folder resource; by default its editors read and write. */
export const folderResource = (
  actions = ["read", "write"],
  roles: Record<string, object> = { editor: editorOf },
) => ({ key: "folder", name: "Folder", actions: actionsOf(actions), roles });

/** The document resource in a folder: an editor of the folder is an editor of its documents. */
export const documentResource = (
  actions = ["read", "write", "delete"],
  roles: Record<string, object> = {},
) => ({
  key: "document",
  name: "Document",
  actions: actionsOf(actions),
  relations: { parent: "folder" },
  roles: { editor: derivedFromFolder("editor", ["read", "write"]), ...roles },
});

/** The tuple that puts document `document` in folder `folder`. */
export const inFolder = (folder: string, document: string, tenant: string) => ({
  subject: `folder:${folder}`,
  relation: "parent",
  object: `document:${document}`,
  tenant,
});

/** A condition set of users, one of documents, and a set rule granting `permission` between them. */
export async function postSetRule(
  write: ApiWrite,
  schemaUrl: string,
  factsUrl: string,
  rule: {
    userSet: { key: string; name: string; condition: object };
    resourceSet: { key: string; name: string; condition: object };
    permission: string;
  },
): Promise<void> {
  const { userSet, resourceSet } = rule;
  await write("POST", `${schemaUrl}/condition_sets`, {
    key: userSet.key,
    name: userSet.name,
    type: "userset",
    conditions: { allOf: [userSet.condition] },
  });
  await write("POST", `${schemaUrl}/condition_sets`, {
    key: resourceSet.key,
    name: resourceSet.name,
    type: "resourceset",
    resource_id: "document",
    conditions: { allOf: [resourceSet.condition] },
  });
  await write("POST", `${factsUrl}/set_rules`, {
    user_set: userSet.key,
    permission: rule.permission,
    resource_set: resourceSet.key,
  });
}

/** Adults (`user.age` over 17) may read public documents (`resource.public`). */
export const postAdultsReadPublicDocs = (write: ApiWrite, schemaUrl: string, factsUrl: string) =>
  postSetRule(write, schemaUrl, factsUrl, {
    userSet: { key: "adults", name: "Adults", condition: { "user.age": { "greater-than": 17 } } },
    resourceSet: {
      key: "public_docs",
      name: "Public documents",
      condition: { "resource.public": { equals: true } },
    },
    permission: "document:read",
  });

/**
 * Tenants t1 and t2; alice a viewer in t1, bob an admin in t2, carol an editor of folder f1 (which holds document d1)
 * in t1, dave an adult with no role. Needs tenant roles `viewer` and `admin` and the folder's `editor`.
 */
export async function postFolderPeople(write: ApiWrite, factsUrl: string): Promise<void> {
  for (const t of ["t1", "t2"]) await write("POST", `${factsUrl}/tenants`, { key: t, name: t });
  await write("POST", `${factsUrl}/users`, {
    key: "alice",
    role_assignments: [{ role: "viewer", tenant: "t1" }],
  });
  await write("POST", `${factsUrl}/users`, {
    key: "bob",
    role_assignments: [{ role: "admin", tenant: "t2" }],
  });
  await write("POST", `${factsUrl}/users`, { key: "carol" });
  await write("POST", `${factsUrl}/users`, { key: "dave", attributes: { age: 30 } });
  await write("POST", `${factsUrl}/relationship_tuples`, inFolder("f1", "d1", "t1"));
  await write("POST", `${factsUrl}/role_assignments`, {
    user: "carol",
    role: "editor",
    resource_instance: "folder:f1",
    tenant: "t1",
  });
}
