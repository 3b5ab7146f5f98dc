// A small environment exercising every rule of the engine, shared by the engine tests.
//
//   account:acme --account--> folder:root --parent--> folder:sub --parent--> document:d1      (tenant t1)
//   folder:xf --parent--> document:x1                                                          (tenant t2)
//   folder:c1 <--parent--> folder:c2 (a tuple cycle)                                           (tenant t1)
//   a:1 <--link--> b:1 (a rule cycle: a#r derives from b#r and b#r from a#r)                   (tenant t1)
//   folder:sub --parent--> document:d3, but the tuple and d3 are in tenant t2

import type { CheckQuery, Engine, EnvironmentData, QueryUser } from "../../src/pdp/engine/index.ts";

export const fixture: EnvironmentData = {
  resources: [
    {
      key: "account",
      actions: ["read", "manage"],
      roles: { admin: { permissions: ["read", "manage"] }, member: { permissions: ["read"] } },
    },
    {
      key: "folder",
      actions: ["read", "create", "delete"],
      relations: { account: "account", parent: "folder" },
      roles: {
        viewer: { permissions: ["read"] },
        editor: {
          permissions: ["create"],
          extends: ["viewer"],
          granted_to: {
            users_with_role: [
              { role: "admin", on_resource: "account", linked_by_relation: "account" },
              { role: "editor", on_resource: "folder", linked_by_relation: "parent" },
            ],
          },
        },
      },
    },
    {
      key: "document",
      actions: ["read", "comment", "write", "delete", "annotate", "audit"],
      action_groups: { editing: ["comment", "write"] },
      relations: { parent: "folder" },
      roles: {
        viewer: {
          permissions: ["read"],
          granted_to: {
            users_with_role: [{ role: "viewer", on_resource: "folder", linked_by_relation: "parent" }],
          },
        },
        editor: {
          permissions: ["editing"],
          extends: ["viewer"],
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
          },
        },
        owner: { permissions: ["delete"], extends: ["editor"] },
        // The flag on one rule.
        reviewer: {
          permissions: ["annotate"],
          granted_to: {
            users_with_role: [
              {
                role: "viewer",
                on_resource: "folder",
                linked_by_relation: "parent",
                when: { no_direct_roles_on_object: true },
              },
            ],
          },
        },
        // The flag on the whole role.
        auditor: {
          permissions: ["audit"],
          granted_to: {
            when: { no_direct_roles_on_object: true },
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
          },
        },
      },
    },
    {
      key: "a",
      actions: ["use"],
      relations: { link: "b" },
      roles: {
        r: {
          permissions: ["use"],
          granted_to: { users_with_role: [{ role: "r", on_resource: "b", linked_by_relation: "link" }] },
        },
      },
    },
    {
      key: "b",
      actions: ["use"],
      relations: { link: "a" },
      roles: {
        r: {
          permissions: ["use"],
          granted_to: { users_with_role: [{ role: "r", on_resource: "a", linked_by_relation: "link" }] },
        },
      },
    },
  ],
  roles: [
    { key: "reader", permissions: ["document:read", "folder:read"] },
    { key: "writer", permissions: ["document:editing"], extends: ["reader"] },
    { key: "admin", permissions: ["document:delete", "folder:delete"], extends: ["writer"] },
    { key: "loop_a", permissions: ["account:read"], extends: ["loop_b"] },
    { key: "loop_b", permissions: ["account:manage"], extends: ["loop_a"] },
  ],
  tenants: [{ key: "default" }, { key: "t1", attributes: { plan: "pro" } }, { key: "t2", attributes: null }],
  users: [
    ...[
      "alice",
      "bob",
      "cara",
      "dan",
      "ed",
      "fay",
      "gus",
      "hal",
      "ivy",
      "jon",
      "kim",
      "ned",
      "ola",
      "pat",
      "mo",
    ].map((key) => ({ key })),
    { key: "quinn", attributes: { age: 30 } },
    { key: "rae", attributes: { age: 12 } },
  ],
  resource_instances: [
    { resource: "account", key: "acme", tenant: "t1" },
    { resource: "folder", key: "root", tenant: "t1" },
    { resource: "folder", key: "sub", tenant: "t1" },
    { resource: "document", key: "d1", tenant: "t1", attributes: { public: false } },
    { resource: "document", key: "d2", tenant: "t1" },
    { resource: "document", key: "pub", tenant: "t1", attributes: { public: true } },
    { resource: "folder", key: "xf", tenant: "t2" },
    { resource: "document", key: "x1", tenant: "t2" },
    { resource: "document", key: "d3", tenant: "t2" },
  ],
  relationship_tuples: [
    { subject: "account:acme", relation: "account", object: "folder:root", tenant: "t1" },
    { subject: "folder:root", relation: "parent", object: "folder:sub", tenant: "t1" },
    { subject: "folder:sub", relation: "parent", object: "document:d1", tenant: "t1" },
    { subject: "folder:xf", relation: "parent", object: "document:x1", tenant: "t2" },
    { subject: "folder:sub", relation: "parent", object: "document:d3", tenant: "t2" },
    // folder:c1 and folder:c2 are created by their tuples
    { subject: "folder:c1", relation: "parent", object: "folder:c2", tenant: "t1" },
    { subject: "folder:c2", relation: "parent", object: "folder:c1", tenant: "t1" },
    { subject: "a:1", relation: "link", object: "b:1", tenant: "t1" },
    { subject: "b:1", relation: "link", object: "a:1", tenant: "t1" },
  ],
  role_assignments: [
    { user: "alice", role: "reader", tenant: "t1" },
    { user: "alice", role: "writer", tenant: "t2" },
    { user: "bob", role: "admin", tenant: "t1" },
    { user: "cara", role: "loop_a", tenant: "t1" },
    { user: "dan", role: "admin", tenant: "t1", resource_instance: "account:acme" },
    { user: "ed", role: "owner", tenant: "t1", resource_instance: "document:d2" },
    { user: "fay", role: "viewer", tenant: "t1", resource_instance: "folder:sub" },
    { user: "gus", role: "viewer", tenant: "t1", resource_instance: "folder:sub" },
    { user: "gus", role: "viewer", tenant: "t1", resource_instance: "document:d1" },
    { user: "hal", role: "editor", tenant: "t1", resource_instance: "folder:sub" },
    { user: "ivy", role: "editor", tenant: "t1", resource_instance: "folder:sub" },
    { user: "ivy", role: "viewer", tenant: "t1", resource_instance: "document:d1" },
    { user: "jon", role: "reader", tenant: "t2" },
    { user: "kim", role: "viewer", tenant: "t1", resource_instance: "folder:sub" },
    { user: "ned", role: "editor", tenant: "t1", resource_instance: "folder:c1" },
    { user: "pat", role: "r", tenant: "t1", resource_instance: "a:1" },
  ],
  condition_sets: [
    {
      key: "adults",
      type: "userset",
      conditions: { allOf: [{ "user.age": { "greater-than-equals": 18 } }] },
    },
    {
      key: "public_docs",
      type: "resourceset",
      resource: "document",
      conditions: { allOf: [{ "resource.public": { equals: true } }] },
    },
  ],
  condition_set_rules: [{ user_set: "adults", permission: "document:read", resource_set: "public_docs" }],
};

/** Builds a check from the short form used in tables: "type" or "type:key", optional tenant. */
export function query(
  user: string | QueryUser,
  action: string,
  resource: string,
  tenant?: string,
  extra: Partial<Pick<CheckQuery, "context">> & { attributes?: Record<string, unknown> } = {},
): CheckQuery {
  const colon = resource.indexOf(":");
  const type = colon < 0 ? resource : resource.slice(0, colon);
  const key = colon < 0 ? undefined : resource.slice(colon + 1);
  return {
    user: typeof user === "string" ? { key: user } : user,
    action,
    resource: {
      type,
      ...(key === undefined ? {} : { key }),
      ...(tenant === undefined ? {} : { tenant }),
      ...(extra.attributes === undefined ? {} : { attributes: extra.attributes }),
    },
    context: extra.context ?? {},
  };
}

/** Every combination of the fixture's users, actions and resources (type level in each tenant and instances). */
export function allQueries(engineData: EnvironmentData, extraUsers: string[] = []): CheckQuery[] {
  const users = [...(engineData.users ?? []).map((u) => u.key), ...extraUsers];
  const queries: CheckQuery[] = [];
  const instances = new Set<string>([
    ...(engineData.resource_instances ?? []).map((i) => `${i.resource}:${i.key}`),
    ...(engineData.relationship_tuples ?? []).flatMap((t) => [t.subject, t.object]),
  ]);
  for (const resource of engineData.resources ?? []) {
    for (const action of resource.actions) {
      for (const user of users) {
        for (const tenant of ["default", "t1", "t2"]) queries.push(query(user, action, resource.key, tenant));
        for (const instance of instances) {
          if (instance.startsWith(`${resource.key}:`)) queries.push(query(user, action, instance));
        }
      }
    }
  }
  return queries;
}

/**
 * The first difference between two engines over the queries and the listings for their users, or undefined.
 * Checks are compared on allow, reason kind and deny code: which of two equally good grants a reason names
 * depends on the order facts were stored in, which incremental changes legitimately alter.
 */
export function firstDifference(actual: Engine, expected: Engine, queries: CheckQuery[]): string | undefined {
  const summary = (decision: ReturnType<Engine["check"]>) =>
    `${decision.allow} ${decision.reason.kind} ${"code" in decision.reason ? decision.reason.code : ""}`;
  const differs = (what: string, a: unknown, e: unknown) => {
    const [left, right] = [JSON.stringify(a), JSON.stringify(e)];
    return left === right ? undefined : `${what}: got ${left}, expected ${right}`;
  };
  const listings = new Map<string, { action: string; resource: CheckQuery["resource"] }>();
  for (const q of queries) {
    const found = differs(`check ${JSON.stringify(q)}`, summary(actual.check(q)), summary(expected.check(q)));
    if (found !== undefined) return found;
    listings.set(JSON.stringify([q.action, q.resource]), { action: q.action, resource: q.resource });
  }
  for (const [key, listing] of listings) {
    const found = differs(
      `authorizedUsers ${key}`,
      actual.authorizedUsers(listing),
      expected.authorizedUsers(listing),
    );
    if (found !== undefined) return found;
  }
  for (const user of new Set(queries.map((q) => q.user.key))) {
    const found =
      differs(
        `userPermissions ${user}`,
        actual.userPermissions({ user: { key: user } }),
        expected.userPermissions({ user: { key: user } }),
      ) ?? differs(`userTenants ${user}`, actual.userTenants(user), expected.userTenants(user));
    if (found !== undefined) return found;
  }
  return undefined;
}
