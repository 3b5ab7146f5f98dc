// Filter plans against checks: on random environments (tenant roles, derivations, condition sets using every
// operator) and on a derivation chain of depth 1 to 4, a plan's condition applied to every instance admits exactly
// the instances that a check on each (in its own tenant, or in the plan's tenant) allows. Rows the PDP does not
// hold are compared with a check on an unknown key in the row's tenant.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  createEngine,
  matchesPlan,
  type Engine,
  type EnvironmentData,
  type PlanExpression,
  type PlanResource,
  type QueryUser,
  type ResourcePlan,
} from "../../src/pdp/engine/index.ts";
import {
  Random,
  randomEnvironment,
  randomResourceAttributes,
  randomUserAttributes,
  SITES,
  TENANTS,
  UNSYNCED_KEYS,
} from "./random-environment.ts";

const SEED = Number(process.env["PDP_PLAN_SEED"] ?? 20261128);
const ENVIRONMENTS = 40;

function admitted(plan: ResourcePlan, resource: PlanResource): boolean {
  if (plan.kind === "always_allowed") return true;
  if (plan.kind === "always_denied") return false;
  return matchesPlan(plan.condition as PlanExpression, resource);
}

function operatorsOf(expression: PlanExpression | undefined, into: Set<string>): void {
  if (expression === undefined) return;
  into.add(expression.operator);
  if ("operands" in expression) for (const e of expression.operands) operatorsOf(e, into);
}

interface Tally {
  plans: number;
  kinds: Record<string, number>;
  operators: Set<string>;
  admittedPairs: number;
  pairs: number;
}

/** Every user (and an unknown one) x type x action x tenant scope: the plan against a check per row. */
function comparePlans(engine: Engine, data: EnvironmentData, random: Random, tally: Tally, where: string) {
  const users: QueryUser[] = [...(data.users ?? []).map((u) => ({ key: u.key })), { key: "stranger" }];
  const rows = (data.resource_instances ?? []).map((i) => ({
    type: i.resource,
    row: { key: i.key, tenant: i.tenant, attributes: i.attributes ?? {} } as PlanResource,
    synced: true,
  }));
  const userKeys = (data.users ?? []).map((u) => u.key);
  for (const resource of data.resources ?? []) {
    for (const key of UNSYNCED_KEYS) {
      const attributes = randomResourceAttributes(random, userKeys);
      rows.push({
        type: resource.key,
        row: { key, tenant: random.pick(TENANTS), attributes },
        synced: false,
      });
    }
  }
  for (const base of users) {
    const user = random.chance(0.2) ? { ...base, attributes: randomUserAttributes(random) } : base;
    for (const resource of data.resources ?? []) {
      for (const action of resource.actions) {
        const context = random.chance(0.5) ? { site: random.pick(SITES) } : {};
        for (const scope of [undefined, random.pick(TENANTS)]) {
          const plan = engine.planResources({
            user,
            action,
            resource: { type: resource.key, ...(scope === undefined ? {} : { tenant: scope }) },
            context,
          });
          tally.plans++;
          tally.kinds[plan.kind] = (tally.kinds[plan.kind] ?? 0) + 1;
          operatorsOf(plan.condition, tally.operators);
          for (const { type, row, synced } of rows) {
            if (type !== resource.key) continue;
            // A row the PDP does not hold is checked as the app would: its key, its tenant, its attributes.
            const tenant = scope ?? row.tenant;
            if (!synced && tenant !== row.tenant) continue;
            const check = engine.check({
              user,
              action,
              resource: synced
                ? { type, key: row.key, ...(scope === undefined ? {} : { tenant: scope }) }
                : { type, key: row.key, tenant, attributes: row.attributes ?? {} },
              context,
            });
            const got = admitted(plan, row);
            tally.pairs++;
            if (got) tally.admittedPairs++;
            assert.equal(
              got,
              check.allow,
              `${where}: ${JSON.stringify(user)} ${action} ${type}:${row.key} (tenant ${row.tenant}, scope ${scope}, ${synced ? "synced" : "unsynced"}): plan ${JSON.stringify(plan)}, check ${JSON.stringify(check.reason)}`,
            );
          }
        }
      }
    }
  }
}

test("a plan admits exactly what checks allow on random environments", (t) => {
  const random = new Random(SEED);
  const tally: Tally = { plans: 0, kinds: {}, operators: new Set(), admittedPairs: 0, pairs: 0 };
  for (let env = 0; env < ENVIRONMENTS; env++) {
    const data = randomEnvironment(random);
    comparePlans(createEngine(data), data, random, tally, `PDP_PLAN_SEED=${SEED} environment ${env}`);
  }
  t.diagnostic(JSON.stringify({ ...tally, operators: [...tally.operators].sort() }));
  // Guards against a generator that stopped producing what makes agreement meaningful.
  for (const kind of ["always_allowed", "always_denied", "conditional"]) {
    assert.ok((tally.kinds[kind] ?? 0) > 20, `only ${tally.kinds[kind]} ${kind} plans`);
  }
  for (const operator of ["and", "or", "not", "eq", "ne", "in", "not_in", "starts_with", "array_subset"]) {
    assert.ok(tally.operators.has(operator), `no plan used ${operator}`);
  }
  assert.ok(tally.admittedPairs > tally.pairs / 10, `only ${tally.admittedPairs} of ${tally.pairs} admitted`);
});

/** folder:f0 <- f1 <- f2 <- f3 (parent), and doc:dN in folder fN-1: a document N hops below the assignment. */
function chain(): EnvironmentData {
  const folders = ["f0", "f1", "f2", "f3"];
  return {
    resources: [
      {
        key: "folder",
        actions: ["read"],
        relations: { parent: "folder" },
        roles: {
          viewer: {
            permissions: ["read"],
            granted_to: {
              users_with_role: [{ role: "viewer", on_resource: "folder", linked_by_relation: "parent" }],
            },
          },
        },
      },
      {
        key: "doc",
        actions: ["read", "write"],
        relations: { parent: "folder" },
        roles: {
          reader: {
            permissions: ["read"],
            granted_to: {
              users_with_role: [{ role: "viewer", on_resource: "folder", linked_by_relation: "parent" }],
            },
          },
          owner: { permissions: ["read", "write"] },
        },
      },
    ],
    roles: [{ key: "member", permissions: ["doc:write"] }],
    users: [{ key: "ann" }, { key: "bob" }],
    tenants: [{ key: "t1" }, { key: "t2" }],
    resource_instances: [
      ...folders.map((key) => ({ resource: "folder", key, tenant: "t1" })),
      ...[1, 2, 3, 4].map((n) => ({ resource: "doc", key: `d${n}`, tenant: "t1" })),
      { resource: "doc", key: "elsewhere", tenant: "t2" },
    ],
    relationship_tuples: [
      ...[1, 2, 3].map((n) => ({
        subject: `folder:f${n - 1}`,
        relation: "parent",
        object: `folder:f${n}`,
        tenant: "t1",
      })),
      ...[1, 2, 3, 4].map((n) => ({
        subject: `folder:f${n - 1}`,
        relation: "parent",
        object: `doc:d${n}`,
        tenant: "t1",
      })),
    ],
    role_assignments: [
      { user: "ann", role: "viewer", tenant: "t1", resource_instance: "folder:f0" },
      { user: "bob", role: "member", tenant: "t2" },
      { user: "bob", role: "owner", tenant: "t1", resource_instance: "doc:d2" },
    ],
  };
}

test("a plan lists documents derived through 1 to 4 hops, and tenant roles as tenants", () => {
  const engine = createEngine(chain());
  const ann = engine.planResources({ user: { key: "ann" }, action: "read", resource: { type: "doc" } });
  assert.deepEqual(ann, {
    kind: "conditional",
    condition: { operator: "in", field: "key", value: ["d1", "d2", "d3", "d4"] },
    key_count: 4,
  });
  const bob = engine.planResources({ user: { key: "bob" }, action: "write", resource: { type: "doc" } });
  assert.deepEqual(bob.condition, {
    operator: "or",
    operands: [
      { operator: "in", field: "tenant", value: ["t2"] },
      { operator: "in", field: "key", value: ["d2"] },
    ],
  });
  // Scoped to t1, bob's tenant role in t2 no longer counts; scoped to t2, it covers the whole tenant.
  const inT1 = engine.planResources({
    user: { key: "bob" },
    action: "write",
    resource: { type: "doc", tenant: "t1" },
  });
  assert.deepEqual(inT1.condition, {
    operator: "and",
    operands: [
      { operator: "eq", field: "tenant", value: "t1" },
      { operator: "in", field: "key", value: ["d2"] },
    ],
  });
  const inT2 = engine.planResources({
    user: { key: "bob" },
    action: "write",
    resource: { type: "doc", tenant: "t2" },
  });
  assert.deepEqual(inT2.condition, { operator: "eq", field: "tenant", value: "t2" });
  assert.equal(
    engine.planResources({ user: { key: "ann" }, action: "delete", resource: { type: "doc" } }).kind,
    "always_denied",
  );
  const tally: Tally = { plans: 0, kinds: {}, operators: new Set(), admittedPairs: 0, pairs: 0 };
  comparePlans(engine, chain(), new Random(SEED), tally, "chain");
});

test("condition sets become comparisons on the resource's fields; a user set that fails removes the rule", () => {
  const data: EnvironmentData = {
    resources: [{ key: "doc", actions: ["read"] }],
    users: [{ key: "ann", attributes: { clearance: 3, team: "blue" } }, { key: "bob" }],
    tenants: [{ key: "t1" }],
    condition_sets: [
      {
        key: "cleared",
        type: "userset",
        conditions: { allOf: [{ "user.clearance": { "greater-than": 1 } }] },
      },
      {
        key: "visible",
        type: "resourceset",
        resource: "doc",
        conditions: {
          anyOf: [
            { "resource.level": { "less-than-equals": { ref: "user.clearance" } } },
            { "resource.owner": { equals: { ref: "user.key" } } },
            { "user.team": { equals: { ref: "resource.team" } } },
          ],
        },
      },
    ],
    condition_set_rules: [{ user_set: "cleared", permission: "doc:read", resource_set: "visible" }],
  };
  const engine = createEngine(data);
  assert.deepEqual(
    engine.planResources({ user: { key: "ann" }, action: "read", resource: { type: "doc" } }),
    {
      kind: "conditional",
      condition: {
        operator: "or",
        operands: [
          { operator: "le", field: "level", value: 3 },
          { operator: "eq", field: "owner", value: "ann" },
          { operator: "eq", field: "team", value: "blue" },
        ],
      },
      key_count: 0,
    },
  );
  assert.equal(
    engine.planResources({ user: { key: "bob" }, action: "read", resource: { type: "doc" } }).kind,
    "always_denied",
  );
  // Attributes sent with the request count, as in a check.
  const sent = engine.planResources({
    user: { key: "bob", attributes: { clearance: 2 } },
    action: "read",
    resource: { type: "doc" },
  });
  assert.equal(sent.kind, "conditional");
});

test("a comparison between two resource fields is decided on the instances held and listed by key", () => {
  const engine = createEngine({
    resources: [{ key: "doc", actions: ["read"] }],
    users: [{ key: "ann" }],
    tenants: [{ key: "t1" }],
    resource_instances: [
      { resource: "doc", key: "same", tenant: "t1", attributes: { author: "x", editor: "x" } },
      { resource: "doc", key: "other", tenant: "t1", attributes: { author: "x", editor: "y" } },
    ],
    condition_sets: [
      { key: "all", type: "userset", conditions: {} },
      {
        key: "own",
        type: "resourceset",
        conditions: { "resource.author": { equals: { ref: "resource.editor" } } },
      },
    ],
    condition_set_rules: [{ user_set: "all", permission: "doc:read", resource_set: "own" }],
  });
  assert.deepEqual(
    engine.planResources({ user: { key: "ann" }, action: "read", resource: { type: "doc" } }),
    {
      kind: "conditional",
      condition: { operator: "in", field: "key", value: ["same"] },
      key_count: 1,
    },
  );
});

test("every operator of the condition language, and its negation, filters as checks decide", () => {
  const values: unknown[] = [
    undefined,
    null,
    0,
    2,
    5,
    "",
    "b",
    "abc",
    "pro",
    ["red"],
    ["red", "blue"],
    [],
    { x: 1 },
  ];
  const operands: Record<string, unknown[]> = {
    equals: [2, "abc", ["red"]],
    "not-equals": [2, "abc"],
    "greater-than": [2, "b"],
    "greater-than-equals": [2, "b"],
    "less-than": [2, "b"],
    "less-than-equals": [2, "b"],
    contains: ["b", "red"],
    "not-contains": ["b", "red"],
    in: [[2, "abc", "pro"]],
    "not-in": [[2, "abc"]],
    array_contains: ["red"],
    "array-contains": ["blue"],
    array_subset: [["red", "blue", "green"]],
    array_superset: [["red"]],
    array_intersect: [["blue", "green"]],
    "starts-with": ["a", ""],
    "ends-with": ["c", "o"],
  };
  const instances = values.map((value, i) => ({
    resource: "doc",
    key: `d${i}`,
    tenant: "t1",
    attributes: value === undefined ? {} : { v: value, nested: { v: value } },
  }));
  const seen = new Set<string>();
  for (const [operator, list] of Object.entries(operands)) {
    for (const operand of list) {
      for (const path of ["resource.v", "resource.nested.v"]) {
        for (const [negate, flipped] of [
          [false, false],
          [true, false],
          [false, true],
          [true, true],
        ]) {
          // Flipped: the known value (a user attribute) on the left, the resource's field as its reference.
          const leaf = flipped
            ? { "user.probe": { [operator]: { ref: path } } }
            : { [path]: { [operator]: operand } };
          const data: EnvironmentData = {
            resources: [{ key: "doc", actions: ["read"] }],
            users: [{ key: "ann", attributes: { probe: operand } }],
            tenants: [{ key: "t1" }],
            resource_instances: instances,
            condition_sets: [
              { key: "all", type: "userset", conditions: {} },
              { key: "some", type: "resourceset", conditions: negate ? { not: leaf } : leaf },
            ],
            condition_set_rules: [{ user_set: "all", permission: "doc:read", resource_set: "some" }],
          };
          const engine = createEngine(data);
          const plan = engine.planResources({
            user: { key: "ann" },
            action: "read",
            resource: { type: "doc" },
          });
          operatorsOf(plan.condition, seen);
          for (const instance of instances) {
            const allowed = engine.check({
              user: { key: "ann" },
              action: "read",
              resource: { type: "doc", key: instance.key },
            }).allow;
            const row = { key: instance.key, tenant: "t1", attributes: instance.attributes };
            assert.equal(
              admitted(plan, row),
              allowed,
              `${JSON.stringify(leaf)} (probe ${JSON.stringify(operand)}) negated ${negate} on ${instance.key}`,
            );
          }
        }
      }
    }
  }
  const all = ["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "not_contains", "starts_with"];
  for (const operator of [
    ...all,
    "ends_with",
    "array_contains",
    "array_subset",
    "array_superset",
    "array_intersect",
  ]) {
    assert.ok(seen.has(operator), `no plan used ${operator}`);
  }
});
