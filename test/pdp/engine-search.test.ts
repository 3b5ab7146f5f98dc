import { test } from "node:test";
import assert from "node:assert/strict";
import { createEngine, type QueryResource } from "../../src/pdp/engine/index.ts";
import { fixture } from "./engine-fixture.ts";

// The searches must list exactly what the check allows: every user, instance and action of the fixture (RBAC,
// ReBAC chains and cycles, ABAC with stored and request attributes) against a brute-force filter of checks.

const engine = createEngine(fixture);
const users = [...(fixture.users ?? []).map((u) => u.key), "nobody"];
const instances = new Map<string, Set<string>>();
for (const name of [
  ...(fixture.resource_instances ?? []).map((i) => `${i.resource}:${i.key}`),
  ...(fixture.relationship_tuples ?? []).flatMap((t) => [t.subject, t.object]),
]) {
  const [type, key] = name.split(":") as [string, string];
  instances.set(type, (instances.get(type) ?? new Set()).add(key));
}
const sorted = (list: string[]) => [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function targets(type: string): QueryResource[] {
  return [
    ...["default", "t1", "t2"].map((tenant) => ({ type, tenant })),
    { type, tenant: "t1", attributes: { public: true } },
    ...[...(instances.get(type) ?? [])].map((key) => ({ type, key })),
  ];
}

test("subject search lists exactly the users the check allows", () => {
  let nonEmpty = 0;
  for (const resource of fixture.resources ?? []) {
    for (const action of resource.actions) {
      for (const target of targets(resource.key)) {
        const expected = sorted(
          users.filter((key) => engine.check({ user: { key }, action, resource: target, context: {} }).allow),
        );
        const found = engine.searchSubjects({ action, resource: target, context: {} });
        assert.deepEqual(found, expected, `${action} on ${JSON.stringify(target)}`);
        if (found.length > 0) nonEmpty++;
      }
    }
  }
  assert.ok(nonEmpty > 20, `only ${nonEmpty} searches found anyone`);
});

test("resource search lists exactly the instances the check allows", () => {
  let nonEmpty = 0;
  for (const resource of fixture.resources ?? []) {
    const keys = [...(instances.get(resource.key) ?? [])];
    for (const action of resource.actions) {
      for (const key of users) {
        const allowed = keys.filter(
          (k) =>
            engine.check({ user: { key }, action, resource: { type: resource.key, key: k }, context: {} })
              .allow,
        );
        const found = engine.searchResources({ user: { key }, action, type: resource.key, context: {} });
        assert.deepEqual(found, sorted(allowed), `${key} ${resource.key}:${action}`);
        if (found.length > 0) nonEmpty++;
      }
    }
  }
  assert.ok(nonEmpty > 20, `only ${nonEmpty} searches found anything`);
  // Request attributes of the user count, as in a check.
  assert.deepEqual(
    engine.searchResources({
      user: { key: "rae", attributes: { age: 40 } },
      action: "read",
      type: "document",
      context: {},
    }),
    ["pub"],
  );
  assert.deepEqual(
    engine.searchResources({ user: { key: "alice" }, action: "fly", type: "document", context: {} }),
    [],
  );
  assert.deepEqual(
    engine.searchResources({ user: { key: "alice" }, action: "read", type: "nothing", context: {} }),
    [],
  );
});

test("action search lists exactly the actions the check allows", () => {
  for (const resource of fixture.resources ?? []) {
    for (const target of targets(resource.key)) {
      for (const key of users) {
        const expected = sorted(
          resource.actions.filter(
            (action) => engine.check({ user: { key }, action, resource: target, context: {} }).allow,
          ),
        );
        const found = engine.searchActions({ user: { key }, resource: target, context: {} });
        assert.deepEqual(found, expected, `${key} on ${JSON.stringify(target)}`);
      }
    }
  }
  assert.deepEqual(
    engine.searchActions({ user: { key: "alice" }, resource: { type: "nothing" }, context: {} }),
    [],
  );
});
