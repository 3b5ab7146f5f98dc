import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createEngine,
  validateConditions,
  type AllowReason,
  type Change,
  type CheckQuery,
  type DenyCode,
  type Engine,
  type EnvironmentData,
  type QueryUser,
  type ResourceData,
} from "../../src/pdp/engine/index.ts";
import { allQueries, firstDifference, fixture, query } from "./engine-fixture.ts";

const engine = createEngine(fixture);

type Expectation =
  { allow: true; reason: Partial<AllowReason> } | { allow: false; code: DenyCode; message?: RegExp };

interface Case {
  name: string;
  query: CheckQuery;
  expect: Expectation;
  /** another engine than the table's */
  on?: Engine;
}

function allows(reason: Partial<AllowReason>): Expectation {
  return { allow: true, reason };
}

function denies(code: DenyCode, message?: RegExp): Expectation {
  return message === undefined ? { allow: false, code } : { allow: false, code, message };
}

function runCases(cases: Case[], on = engine): void {
  for (const { name, query: q, expect, on: caseEngine } of cases) {
    test(name, () => {
      const decision = (caseEngine ?? on).check(q);
      assert.equal(decision.allow, expect.allow, JSON.stringify(decision.reason));
      if (expect.allow) {
        const picked = Object.fromEntries(
          Object.keys(expect.reason).map((key) => [key, (decision.reason as Record<string, unknown>)[key]]),
        );
        assert.deepEqual(picked, expect.reason);
      } else {
        assert.equal(decision.reason.kind, "deny");
        if (decision.reason.kind !== "deny") return;
        assert.equal(decision.reason.code, expect.code, decision.reason.message);
        if (expect.message) assert.match(decision.reason.message, expect.message);
      }
    });
  }
}

describe("RBAC", () => {
  runCases([
    {
      name: "a tenant role grants its permission in its tenant",
      query: query("alice", "read", "document", "t1"),
      expect: allows({ kind: "rbac", role: "reader", tenant: "t1" }),
    },
    {
      name: "a tenant role lacking the permission denies and names the role",
      query: query("alice", "write", "document", "t1"),
      expect: denies("NO_PERMISSION", /has role reader in tenant 't1', which lacks document:write/),
    },
    {
      name: "a permission naming an action group grants the group's actions",
      query: query("alice", "write", "document", "t2"),
      expect: allows({ kind: "rbac", role: "writer", tenant: "t2" }),
    },
    {
      name: "extends inherits the extended role's permissions",
      query: query("alice", "read", "folder", "t2"),
      expect: allows({ kind: "rbac", role: "writer" }),
    },
    {
      name: "extends is transitive",
      query: query("bob", "read", "document", "t1"),
      expect: allows({ kind: "rbac", role: "admin" }),
    },
    {
      name: "the extending role keeps its own permissions",
      query: query("bob", "delete", "document", "t1"),
      expect: allows({ kind: "rbac", role: "admin" }),
    },
    {
      name: "an extends cycle terminates and grants both roles' permissions",
      query: query("cara", "manage", "account", "t1"),
      expect: allows({ kind: "rbac", role: "loop_a" }),
    },
    {
      name: "a tenant role grants on every instance of its tenant",
      query: query("alice", "read", "document:d1"),
      expect: allows({ kind: "rbac", role: "reader", tenant: "t1" }),
    },
  ]);
});

describe("tenant isolation", () => {
  runCases([
    {
      name: "a role in t1 grants nothing in t2",
      query: query("bob", "read", "document", "t2"),
      expect: denies("NO_ROLE_IN_TENANT", /no role in tenant 't2' \(has roles in t1\)/),
    },
    {
      name: "a role in t2 grants in t2",
      query: query("jon", "read", "document", "t2"),
      expect: allows({ kind: "rbac", role: "reader", tenant: "t2" }),
    },
    {
      name: "an instance check uses the instance's tenant (t1), not the default",
      query: query("jon", "read", "document:d1"),
      expect: denies("NO_ROLE_IN_TENANT", /tenant 't1'/),
    },
    {
      name: "an instance of t2 is readable with a t2 role",
      query: query("jon", "read", "document:x1"),
      expect: allows({ kind: "rbac", tenant: "t2" }),
    },
    {
      name: "a check without tenant runs in the default tenant",
      query: query("alice", "read", "document"),
      expect: denies("NO_ROLE_IN_TENANT", /tenant 'default'/),
    },
    {
      name: "a request tenant contradicting the instance's tenant denies",
      query: query("dan", "write", "document:d1", "t2"),
      expect: denies("TENANT_MISMATCH", /belongs to tenant 't1', not 't2'/),
    },
    {
      name: "the request tenant 'default' (what the SDK fills in) does not contradict",
      query: query("dan", "write", "document:d1", "default"),
      expect: allows({ kind: "rebac", tenant: "t1" }),
    },
    {
      name: "instance roles in t1 derive nothing through a tuple of t2",
      query: query("kim", "read", "document:d3"),
      expect: denies("NO_ROLE_IN_TENANT", /tenant 't2'/),
    },
    {
      name: "instance roles of t1 do not reach instances of t2",
      query: query("dan", "read", "document:x1"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
  ]);
});

describe("ReBAC", () => {
  runCases([
    {
      name: "a direct instance role grants its permissions on that instance",
      query: query("ed", "delete", "document:d2"),
      expect: allows({ kind: "rebac", role: "owner", instance: "document:d2", tenant: "t1", via: [] }),
    },
    {
      name: "a resource role's extends applies (owner extends editor extends viewer)",
      query: query("ed", "read", "document:d2"),
      expect: allows({ kind: "rebac", role: "owner", via: [] }),
    },
    {
      name: "an instance role grants nothing on another instance",
      query: query("ed", "read", "document:d1"),
      expect: denies("NO_ROLE_IN_TENANT", /no role on document:d1/),
    },
    {
      name: "an instance role grants nothing at the type level",
      query: query("ed", "read", "document", "t1"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
    {
      name: "derivation of depth 1",
      query: query("fay", "read", "document:d1"),
      expect: allows({
        kind: "rebac",
        role: "viewer",
        instance: "document:d1",
        via: [{ role: "viewer", instance: "folder:sub", relation: "parent" }],
      }),
    },
    {
      name: "derivation of depth 3 (account -> folder -> folder -> document)",
      query: query("dan", "write", "document:d1"),
      expect: allows({
        kind: "rebac",
        role: "editor",
        instance: "document:d1",
        tenant: "t1",
        via: [
          { role: "admin", instance: "account:acme", relation: "account" },
          { role: "editor", instance: "folder:root", relation: "parent" },
          { role: "editor", instance: "folder:sub", relation: "parent" },
        ],
      }),
    },
    {
      name: "a derived role lacking the permission denies and lists the roles held",
      query: query("dan", "delete", "document:d1"),
      expect: denies(
        "NO_PERMISSION",
        /roles auditor, editor, reviewer, viewer on document:d1, which lack document:delete/,
      ),
    },
    {
      name: "a role implied by extends satisfies a derivation rule (folder editor implies viewer -> reviewer)",
      query: query("hal", "annotate", "document:d1"),
      expect: allows({
        kind: "rebac",
        role: "reviewer",
        via: [{ role: "editor", instance: "folder:sub", relation: "parent" }],
      }),
    },
    {
      name: "no_direct_roles_on_object on a rule: applies without a direct role",
      query: query("fay", "annotate", "document:d1"),
      expect: allows({ kind: "rebac", role: "reviewer" }),
    },
    {
      name: "no_direct_roles_on_object on a rule: off when the user has a direct role on the object",
      query: query("gus", "annotate", "document:d1"),
      expect: denies("NO_PERMISSION"),
    },
    {
      name: "the direct role itself still grants",
      query: query("gus", "read", "document:d1"),
      expect: allows({ kind: "rebac", role: "viewer", via: [] }),
    },
    {
      name: "no_direct_roles_on_object on the role: applies without a direct role",
      query: query("hal", "audit", "document:d1"),
      expect: allows({ kind: "rebac", role: "auditor" }),
    },
    {
      name: "no_direct_roles_on_object on the role: off when the user has a direct role",
      query: query("ivy", "audit", "document:d1"),
      expect: denies("NO_PERMISSION"),
    },
    {
      name: "rules without the flag still apply to users with a direct role",
      query: query("ivy", "write", "document:d1"),
      expect: allows({ kind: "rebac", role: "editor" }),
    },
    {
      name: "a tuple cycle: derivation goes around it",
      query: query("ned", "create", "folder:c2"),
      expect: allows({ kind: "rebac", via: [{ role: "editor", instance: "folder:c1", relation: "parent" }] }),
    },
    {
      name: "a tuple cycle: a search without a grant terminates",
      query: query("mo", "create", "folder:c1"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
    {
      name: "a rule cycle: derivation follows it",
      query: query("pat", "use", "b:1"),
      expect: allows({ kind: "rebac", role: "r", via: [{ role: "r", instance: "a:1", relation: "link" }] }),
    },
    {
      name: "a rule cycle: a search without a grant terminates",
      query: query("ola", "use", "a:1"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
  ]);
});

describe("ABAC", () => {
  runCases([
    {
      name: "a user in the userset acting on a resource in the resourceset is allowed",
      query: query("quinn", "read", "document:pub"),
      expect: allows({ kind: "abac", user_set: "adults", resource_set: "public_docs" }),
    },
    {
      name: "a resource outside the resourceset is denied",
      query: query("quinn", "read", "document:d1"),
      expect: denies("NO_ROLE_IN_TENANT", /no condition-set rule granting document:read matched/),
    },
    {
      name: "a user outside the userset is denied",
      query: query("rae", "read", "document:pub"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
    {
      name: "request user attributes override stored ones",
      query: query({ key: "rae", attributes: { age: 20 } }, "read", "document:pub"),
      expect: allows({ kind: "abac" }),
    },
    {
      name: "request resource attributes override stored ones",
      query: query("quinn", "read", "document:pub", undefined, { attributes: { public: false } }),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
    {
      name: "a type-level check matches on request resource attributes",
      query: query("quinn", "read", "document", "t1", { attributes: { public: true } }),
      expect: allows({ kind: "abac" }),
    },
    {
      name: "condition-set rules are not tied to a tenant",
      query: query("quinn", "read", "document", "t2", { attributes: { public: true } }),
      expect: allows({ kind: "abac" }),
    },
    {
      name: "a rule grants only its own permission",
      query: query("quinn", "write", "document:pub"),
      expect: denies("NO_ROLE_IN_TENANT"),
    },
    {
      name: "an unknown user with matching request attributes is allowed by a rule",
      query: query({ key: "ghost", attributes: { age: 40 } }, "read", "document:pub"),
      expect: allows({ kind: "abac", user_set: "adults" }),
    },
    {
      name: "an unknown user without matching attributes is denied as unknown",
      query: query("ghost", "read", "document:pub"),
      expect: denies("UNKNOWN_USER", /'ghost' is not known; no condition-set rule/),
    },
  ]);

  function matches(
    userConditions: unknown,
    user: QueryUser,
    options: { context?: Record<string, unknown>; resourceConditions?: unknown } = {},
  ): boolean {
    const abac = createEngine({
      resources: [{ key: "document", actions: ["read"] }],
      tenants: [{ key: "t1" }],
      resource_instances: [
        { resource: "document", key: "doc", tenant: "t1", attributes: { owner: "u", level: 3 } },
      ],
      condition_sets: [
        { key: "us", type: "userset", conditions: userConditions },
        {
          key: "rs",
          type: "resourceset",
          resource: "document",
          conditions: options.resourceConditions ?? {},
        },
      ],
      condition_set_rules: [{ user_set: "us", permission: "document:read", resource_set: "rs" }],
    });
    return abac.check(query(user, "read", "document:doc", undefined, { context: options.context ?? {} }))
      .allow;
  }

  const operatorCases: [operator: string, attribute: unknown, operand: unknown, expected: boolean][] = [
    ["equals", "a", "a", true],
    ["equals", "a", "b", false],
    ["equals", ["a", "b"], ["a", "b"], true],
    ["equals", { k: 1 }, { k: 1 }, true],
    ["equals", 1, "1", false],
    ["not-equals", "b", "a", true],
    ["not-equals", "a", "a", false],
    ["greater-than", 5, 3, true],
    ["greater-than", 3, 3, false],
    ["greater-than", "b", "a", true],
    ["greater-than", "5", 3, false],
    ["greater-than-equals", 3, 3, true],
    ["greater-than-equals", 2, 3, false],
    ["less-than", 2, 3, true],
    ["less-than", 3, 3, false],
    ["less-than-equals", 3, 3, true],
    ["less-than-equals", 4, 3, false],
    ["contains", "hello world", "world", true],
    ["contains", "hello", "z", false],
    ["contains", ["a", "b"], "a", true],
    ["not-contains", "hello", "z", true],
    ["not-contains", "hello", "h", false],
    ["in", "US", ["US", "CA"], true],
    ["in", "FR", ["US", "CA"], false],
    ["not-in", "FR", ["US"], true],
    ["not-in", "US", ["US"], false],
    ["array_contains", ["admin", "dev"], "dev", true],
    ["array_contains", ["admin"], "dev", false],
    ["array_contains", "dev", "dev", false],
    ["array-contains", ["admin", "dev"], "admin", true],
    ["array_subset", ["a"], ["a", "b"], true],
    ["array_subset", ["a", "c"], ["a", "b"], false],
    ["array_superset", ["a", "b", "c"], ["a", "b"], true],
    ["array_superset", ["a"], ["a", "b"], false],
    ["array_intersect", ["a", "x"], ["x", "y"], true],
    ["array_intersect", ["a"], ["b"], false],
    ["starts-with", "alice@acme.com", "alice", true],
    ["starts-with", "alice@acme.com", "bob", false],
    ["ends-with", "alice@acme.com", "@acme.com", true],
    ["ends-with", "alice@acme.com", "@other.com", false],
  ];
  for (const [operator, attribute, operand, expected] of operatorCases) {
    test(`operator ${operator}: ${JSON.stringify(attribute)} vs ${JSON.stringify(operand)} -> ${expected}`, () => {
      const conditions = { allOf: [{ "user.x": { [operator]: operand } }] };
      assert.equal(matches(conditions, { key: "u", attributes: { x: attribute } }), expected);
    });
  }

  test("every operator is false when the attribute is missing, negative ones included", () => {
    for (const [operator, , operand] of operatorCases) {
      assert.equal(matches({ "user.x": { [operator]: operand } }, { key: "u" }), false, operator);
    }
    assert.equal(matches({ not: { "user.x": { equals: "a" } } }, { key: "u" }), true);
  });

  const logicCases: [name: string, conditions: unknown, expected: boolean][] = [
    [
      "allOf with a false member",
      { allOf: [{ "user.a": { equals: 1 } }, { "user.b": { equals: 9 } }] },
      false,
    ],
    ["allOf with true members", { allOf: [{ "user.a": { equals: 1 } }, { "user.b": { equals: 2 } }] }, true],
    [
      "anyOf with one true member",
      { anyOf: [{ "user.a": { equals: 9 } }, { "user.b": { equals: 2 } }] },
      true,
    ],
    [
      "anyOf with no true member",
      { anyOf: [{ "user.a": { equals: 9 } }, { "user.b": { equals: 9 } }] },
      false,
    ],
    ["empty anyOf", { anyOf: [] }, false],
    ["empty conditions", {}, true],
    ["not", { not: { "user.a": { equals: 1 } } }, false],
    [
      "nested allOf/anyOf/not",
      {
        allOf: [
          { anyOf: [{ "user.a": { equals: 9 } }, { allOf: [{ "user.b": { equals: 2 } }] }] },
          { not: { "user.a": { equals: 5 } } },
        ],
      },
      true,
    ],
    ["several keys in one node all hold", { "user.a": { equals: 1 }, "user.b": { equals: 3 } }, false],
    ["several operators on one path", { "user.a": { "greater-than": 0, "less-than": 2 } }, true],
  ];
  for (const [name, conditions, expected] of logicCases) {
    test(`logic: ${name}`, () => {
      assert.equal(matches(conditions, { key: "u", attributes: { a: 1, b: 2 } }), expected);
    });
  }

  test("paths: built-in user fields, nested attributes, context, resource built-ins and refs", () => {
    const user: QueryUser = {
      key: "u",
      email: "u@acme.com",
      attributes: { address: { city: "Paris" }, level: 3 },
    };
    assert.equal(matches({ "user.key": { equals: "u" } }, user), true);
    assert.equal(matches({ "user.email": { "ends-with": "@acme.com" } }, user), true);
    assert.equal(matches({ "user.address.city": { equals: "Paris" } }, user), true);
    assert.equal(matches({ "user.address.zip": { equals: "75001" } }, user), false);
    assert.equal(
      matches({ "context.ip": { "starts-with": "10." } }, user, { context: { ip: "10.1.2.3" } }),
      true,
    );
    assert.equal(matches({ "context.ip": { "starts-with": "10." } }, user, { context: {} }), false);
    const resourceBuiltIns = {
      allOf: [
        { "resource.type": { equals: "document" } },
        { "resource.key": { equals: "doc" } },
        { "resource.tenant": { equals: "t1" } },
        { "resource.owner": { equals: { ref: "user.key" } } },
        { "resource.level": { "greater-than-equals": { ref: "user.level" } } },
      ],
    };
    assert.equal(matches({}, user, { resourceConditions: resourceBuiltIns }), true);
    assert.equal(matches({}, { ...user, key: "other" }, { resourceConditions: resourceBuiltIns }), false);
  });

  test("stored user profile fields are visible to conditions", () => {
    const withEmail = createEngine({
      ...fixture,
      users: [{ key: "sam", email: "sam@acme.com" }],
      condition_sets: [
        { key: "acme", type: "userset", conditions: { "user.email": { "ends-with": "@acme.com" } } },
        { key: "all_docs", type: "resourceset", resource: "document", conditions: {} },
      ],
      condition_set_rules: [{ user_set: "acme", permission: "document:delete", resource_set: "all_docs" }],
    });
    assert.equal(withEmail.check(query("sam", "delete", "document:d1")).allow, true);
  });

  test("a condition set with problems never matches", () => {
    assert.equal(matches({ "user.a": { "is-about": 1 } }, { key: "u", attributes: { a: 1 } }), false);
    assert.equal(
      matches({ anyOf: [{ "user.a": { equals: 1 } }, { bogus: 1 }] }, { key: "u", attributes: { a: 1 } }),
      false,
    );
  });
});

describe("validateConditions", () => {
  test("accepts every supported construct", () => {
    assert.deepEqual(
      validateConditions({
        allOf: [
          { anyOf: [{ "user.age": { "greater-than": 18 } }, { "user.role": { in: ["a", "b"] } }] },
          { not: { "resource.tags": { array_contains: "x" } } },
          { "resource.owner": { equals: { ref: "user.key" } } },
          { "context.ip": { "starts-with": "10." } },
        ],
      }),
      [],
    );
    assert.deepEqual(validateConditions({}), []);
  });

  const invalid: [name: string, conditions: unknown, path: string, message: RegExp][] = [
    [
      "unknown operator",
      { allOf: [{ "user.age": { "older-than": 3 } }] },
      "allOf[0].user.age.older-than",
      /unknown operator/,
    ],
    ["unknown key", { allOf: [{ age: { equals: 3 } }] }, "allOf[0].age", /unknown key "age"/],
    ["path without attribute", { "user.": { equals: 3 } }, "user.", /unknown key/],
    ["allOf not an array", { allOf: { "user.a": { equals: 1 } } }, "allOf", /expects an array/],
    ["node not an object", { anyOf: [1] }, "anyOf[0]", /must be an object/],
    ["empty comparisons", { "user.a": {} }, "user.a", /expected an object of comparisons/],
    ["in without an array", { "user.a": { in: "x" } }, "user.a.in", /expects an array/],
    [
      "ordering on a boolean",
      { "user.a": { "greater-than": true } },
      "user.a.greater-than",
      /number or a string/,
    ],
    ["starts-with on a number", { "user.a": { "starts-with": 1 } }, "user.a.starts-with", /expects a string/],
    ["ref to nothing", { "user.a": { equals: { ref: "nowhere" } } }, "user.a.equals.ref", /attribute path/],
  ];
  for (const [name, conditions, path, message] of invalid) {
    test(`reports ${name}`, () => {
      const problems = validateConditions(conditions);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0]?.path, path);
      assert.match(problems[0]?.message ?? "", message);
    });
  }
});

describe("unknown names deny with a code", () => {
  runCases([
    {
      name: "unknown resource type",
      query: query("bob", "read", "spaceship", "t1"),
      expect: denies("UNKNOWN_RESOURCE_TYPE", /'spaceship' is not defined/),
    },
    {
      name: "unknown action",
      query: query("bob", "fly", "document", "t1"),
      expect: denies("UNKNOWN_ACTION", /action 'fly' is not defined on resource type 'document'/),
    },
    {
      name: "an action group is not an action",
      query: query("bob", "editing", "document", "t1"),
      expect: denies("UNKNOWN_ACTION"),
    },
    {
      name: "unknown instance without a grant in the request's tenant",
      query: query("bob", "delete", "document:nope", "t2"),
      expect: denies(
        "UNKNOWN_INSTANCE",
        /'document:nope' does not exist.*no role in tenant 't2' \(has roles in t1\)/,
      ),
    },
    { name: "unknown user", query: query("ghost", "read", "document", "t1"), expect: denies("UNKNOWN_USER") },
    {
      name: "unknown tenant",
      query: query("alice", "read", "document", "t9"),
      expect: denies("UNKNOWN_TENANT", /tenant 't9' does not exist/),
    },
  ]);
});

describe("instances the engine does not hold", () => {
  runCases([
    {
      name: "a tenant role grants in the tenant the request names",
      query: query("bob", "read", "document:not-synced-1", "t1"),
      expect: allows({ kind: "rbac", role: "admin", tenant: "t1" }),
    },
    {
      name: "without a tenant the check runs in the default tenant",
      query: query("bob", "read", "document:not-synced-1"),
      expect: denies(
        "UNKNOWN_INSTANCE",
        /'document:not-synced-1' does not exist, so only tenant roles and condition-set rules apply: user 'bob' has no role in tenant 'default' \(has roles in t1\)/,
      ),
    },
    {
      name: "a tenant role lacking the permission",
      query: query("alice", "delete", "document:not-synced-1", "t1"),
      expect: denies("UNKNOWN_INSTANCE", /has role reader in tenant 't1', which lacks document:delete/),
    },
    {
      name: "condition-set rules see the request's resource attributes",
      query: query("quinn", "read", "document:not-synced-1", "t2", { attributes: { public: true } }),
      expect: allows({ kind: "abac", user_set: "adults", resource_set: "public_docs" }),
    },
    {
      name: "condition-set rules see the key and the request's tenant as resource.key and resource.tenant",
      query: query("u", "read", "document:k9", "t2"),
      on: createEngine({
        resources: [{ key: "document", actions: ["read"] }],
        tenants: [{ key: "t2" }],
        users: [{ key: "u" }],
        condition_sets: [
          { key: "all", type: "userset", conditions: {} },
          {
            key: "k9_in_t2",
            type: "resourceset",
            conditions: {
              allOf: [{ "resource.key": { equals: "k9" } }, { "resource.tenant": { equals: "t2" } }],
            },
          },
        ],
        condition_set_rules: [{ user_set: "all", permission: "document:read", resource_set: "k9_in_t2" }],
      }),
      expect: allows({ kind: "abac", resource_set: "k9_in_t2" }),
    },
    {
      name: "ReBAC needs the instance: derived roles do not reach it",
      query: query("dan", "read", "document:not-synced-1", "t1"),
      expect: denies("UNKNOWN_INSTANCE", /no role in tenant 't1'/),
    },
    {
      name: "an unknown user is reported first",
      query: query("ghost", "read", "document:not-synced-1", "t1"),
      expect: denies("UNKNOWN_USER"),
    },
    {
      name: "an unknown tenant is reported before the instance",
      query: query("bob", "read", "document:not-synced-1", "t9"),
      expect: denies("UNKNOWN_TENANT"),
    },
  ]);

  test("listings and all tenants treat it like its resource type in the request's tenant", () => {
    const users = engine.authorizedUsers({
      action: "read",
      resource: { type: "document", key: "not-synced-1", tenant: "t1" },
    });
    assert.deepEqual(users, {
      resource: "document:not-synced-1",
      tenant: "t1",
      users: {
        alice: [{ user: "alice", tenant: "t1", resource: "__tenant:t1", role: "reader" }],
        bob: [{ user: "bob", tenant: "t1", resource: "__tenant:t1", role: "admin" }],
      },
    });
    assert.deepEqual(
      engine.allTenants(query("alice", "read", "document:not-synced-1")).map((t) => t.tenant.key),
      ["t1", "t2"],
    );
  });
});

describe("listings", () => {
  test("userPermissions: tenant entries", () => {
    assert.deepEqual(engine.userPermissions({ user: { key: "alice" }, resource_types: ["__tenant"] }), {
      "__tenant:t1": {
        permissions: ["document:read", "folder:read"],
        roles: ["reader"],
        tenant: { key: "t1", attributes: { plan: "pro" } },
      },
      "__tenant:t2": {
        permissions: ["document:comment", "document:read", "document:write", "folder:read"],
        roles: ["writer"],
        tenant: { key: "t2", attributes: {} },
      },
    });
  });

  test("userPermissions: tenant roles reach every instance of their tenant", () => {
    const permissions = engine.userPermissions({
      user: { key: "alice" },
      resource_types: ["document", "folder"],
    });
    const summary = Object.fromEntries(
      Object.entries(permissions).map(([name, entry]) => [
        name,
        [entry.permissions.join(" "), entry.roles.join(" ")],
      ]),
    );
    const t1Document = ["document:read", "reader"];
    const t2Document = ["document:comment document:read document:write", "writer"];
    assert.deepEqual(summary, {
      "document:d1": t1Document,
      "document:d2": t1Document,
      "document:d3": t2Document,
      "document:pub": t1Document,
      "document:x1": t2Document,
      "folder:c1": ["folder:read", "reader"],
      "folder:c2": ["folder:read", "reader"],
      "folder:root": ["folder:read", "reader"],
      "folder:sub": ["folder:read", "reader"],
      "folder:xf": ["folder:read", "writer"],
    });
    assert.deepEqual(permissions["folder:xf"]?.tenant, { key: "t2", attributes: {} });
  });

  test("userPermissions: condition-set rules, with request attributes and context", () => {
    assert.deepEqual(engine.userPermissions({ user: { key: "quinn" } }), {
      "document:pub": {
        permissions: ["document:read"],
        roles: [],
        tenant: { key: "t1", attributes: { plan: "pro" } },
        resource: { key: "pub", type: "document", attributes: { public: true } },
      },
    });
    assert.deepEqual(engine.userPermissions({ user: { key: "rae" } }), {});
    assert.deepEqual(Object.keys(engine.userPermissions({ user: { key: "rae", attributes: { age: 30 } } })), [
      "document:pub",
    ]);
    // A rule that needs no resource attribute also grants on the resource type, in every tenant.
    const open = createEngine({
      resources: [{ key: "document", actions: ["read", "write"] }],
      tenants: [{ key: "t1" }, { key: "t2" }],
      users: [{ key: "u" }],
      resource_instances: [{ resource: "document", key: "d", tenant: "t2" }],
      condition_sets: [
        { key: "on_site", type: "userset", conditions: { "context.site": { equals: "hq" } } },
        { key: "any", type: "resourceset", conditions: {} },
      ],
      condition_set_rules: [{ user_set: "on_site", permission: "document:write", resource_set: "any" }],
    });
    assert.deepEqual(open.userPermissions({ user: { key: "u" } }), {});
    const onSite = open.userPermissions({ user: { key: "u" }, context: { site: "hq" } });
    assert.deepEqual(
      Object.entries(onSite).map(([name, entry]) => [name, entry.permissions]),
      [
        ["__tenant:t1", ["document:write"]],
        ["__tenant:t2", ["document:write"]],
        ["document:d", ["document:write"]],
      ],
    );
    assert.deepEqual(onSite["__tenant:t1"]?.roles, []);
  });

  test("userPermissions: instance entries with direct and derived roles", () => {
    const permissions = engine.userPermissions({ user: { key: "dan" } });
    assert.deepEqual(Object.keys(permissions), ["account:acme", "document:d1", "folder:root", "folder:sub"]);
    assert.deepEqual(permissions["document:d1"], {
      permissions: [
        "document:annotate",
        "document:audit",
        "document:comment",
        "document:read",
        "document:write",
      ],
      roles: ["auditor", "editor", "reviewer", "viewer"],
      tenant: { key: "t1", attributes: { plan: "pro" } },
      resource: { key: "d1", type: "document", attributes: { public: false } },
    });
    assert.deepEqual(permissions["account:acme"]?.roles, ["admin"]);
  });

  test("userPermissions: filters", () => {
    const dan = { key: "dan" };
    assert.deepEqual(Object.keys(engine.userPermissions({ user: dan, resource_types: ["folder"] })), [
      "folder:root",
      "folder:sub",
    ]);
    assert.deepEqual(Object.keys(engine.userPermissions({ user: dan, resources: ["document:d1"] })), [
      "document:d1",
    ]);
    assert.deepEqual(engine.userPermissions({ user: dan, tenants: ["t2"] }), {});
    assert.deepEqual(
      Object.keys(engine.userPermissions({ user: { key: "alice" }, resource_types: ["__tenant"] })),
      ["__tenant:t1", "__tenant:t2"],
    );
    assert.deepEqual(Object.keys(engine.userPermissions({ user: { key: "alice" }, tenants: ["t2"] })), [
      "__tenant:t2",
      "document:d3",
      "document:x1",
      "folder:xf",
    ]);
    assert.deepEqual(engine.userPermissions({ user: { key: "ghost" } }), {});
  });

  test("authorizedUsers on an instance: tenant roles and direct or derived instance roles", () => {
    const result = engine.authorizedUsers({ action: "read", resource: { type: "document", key: "d1" } });
    assert.equal(result.resource, "document:d1");
    assert.equal(result.tenant, "t1");
    assert.deepEqual(Object.keys(result.users), ["alice", "bob", "dan", "fay", "gus", "hal", "ivy", "kim"]);
    assert.deepEqual(result.users.alice, [
      { user: "alice", tenant: "t1", resource: "__tenant:t1", role: "reader" },
    ]);
    assert.deepEqual(result.users.dan, [
      { user: "dan", tenant: "t1", resource: "document:d1", role: "editor" },
      { user: "dan", tenant: "t1", resource: "document:d1", role: "viewer" },
    ]);
  });

  test("authorizedUsers on a type lists tenant roles only", () => {
    assert.deepEqual(
      engine.authorizedUsers({ action: "read", resource: { type: "document", tenant: "t2" } }),
      {
        resource: "document:*",
        tenant: "t2",
        users: {
          alice: [{ user: "alice", tenant: "t2", resource: "__tenant:t2", role: "writer" }],
          jon: [{ user: "jon", tenant: "t2", resource: "__tenant:t2", role: "reader" }],
        },
      },
    );
    assert.deepEqual(engine.authorizedUsers({ action: "fly", resource: { type: "document" } }), {
      resource: "document:*",
      tenant: "default",
      users: {},
    });
  });

  test("authorizedUsers lists users granted by condition-set rules, named by their user set", () => {
    assert.deepEqual(
      engine.authorizedUsers({ action: "read", resource: { type: "document", key: "pub" } }).users,
      {
        alice: [{ user: "alice", tenant: "t1", resource: "__tenant:t1", role: "reader" }],
        bob: [{ user: "bob", tenant: "t1", resource: "__tenant:t1", role: "admin" }],
        quinn: [{ user: "quinn", tenant: "t1", resource: "document:pub", role: "adults" }],
      },
    );
    const typeLevel = engine.authorizedUsers({
      action: "read",
      resource: { type: "document", tenant: "default", attributes: { public: true } },
    });
    assert.deepEqual(typeLevel.users, {
      quinn: [{ user: "quinn", tenant: "default", resource: "document:*", role: "adults" }],
    });
  });

  test("authorizedUsers respects no_direct_roles_on_object", () => {
    const result = engine.authorizedUsers({ action: "annotate", resource: { type: "document", key: "d1" } });
    // gus and ivy hold a direct role on d1, so the flagged rule does not make them reviewers.
    assert.deepEqual(Object.keys(result.users), ["dan", "fay", "hal", "kim"]);
  });

  test("userTenants", () => {
    assert.deepEqual(engine.userTenants("alice"), [
      { key: "t1", attributes: { plan: "pro" } },
      { key: "t2", attributes: {} },
    ]);
    assert.deepEqual(engine.userTenants("dan"), [{ key: "t1", attributes: { plan: "pro" } }]);
    assert.deepEqual(engine.userTenants("ghost"), []);
  });

  test("allTenants", () => {
    assert.deepEqual(
      engine.allTenants(query("alice", "read", "document")).map((t) => [t.tenant.key, t.reason.kind]),
      [
        ["t1", "rbac"],
        ["t2", "rbac"],
      ],
    );
    assert.deepEqual(
      engine.allTenants(query("dan", "write", "document:d1")).map((t) => t.tenant),
      [{ key: "t1", attributes: { plan: "pro" } }],
    );
    const abac = engine.allTenants(
      query("quinn", "read", "document", undefined, { attributes: { public: true } }),
    );
    assert.deepEqual(
      abac.map((t) => t.tenant.key),
      ["default", "t1", "t2"],
    );
    assert.deepEqual(engine.allTenants(query("alice", "fly", "document")), []);
  });

  test("bulkCheck answers in order", () => {
    const decisions = engine.bulkCheck([
      query("alice", "read", "document", "t1"),
      query("alice", "delete", "document", "t1"),
      query("dan", "write", "document:d1"),
    ]);
    assert.deepEqual(
      decisions.map((d) => d.allow),
      [true, false, true],
    );
  });
});

// ---- incremental changes ----

function clone(data: EnvironmentData): EnvironmentData {
  return structuredClone(data);
}

function resource(data: EnvironmentData, key: string): ResourceData {
  const found = data.resources?.find((r) => r.key === key);
  if (found === undefined) throw new Error(`no resource ${key}`);
  return found;
}

interface Scenario {
  name: string;
  changes: Change[];
  expected: (data: EnvironmentData) => EnvironmentData;
}

const scenarios: Scenario[] = [
  {
    name: "user upsert with an assignment",
    changes: [
      { kind: "user", op: "upsert", data: { key: "zed" } },
      { kind: "role_assignment", op: "upsert", data: { user: "zed", role: "reader", tenant: "t1" } },
    ],
    expected: (d) => ({
      ...d,
      users: [...(d.users ?? []), { key: "zed" }],
      role_assignments: [...(d.role_assignments ?? []), { user: "zed", role: "reader", tenant: "t1" }],
    }),
  },
  {
    name: "user upsert changing attributes",
    changes: [{ kind: "user", op: "upsert", data: { key: "rae", attributes: { age: 30 } } }],
    expected: (d) => ({
      ...d,
      users: d.users?.map((u) => (u.key === "rae" ? { key: "rae", attributes: { age: 30 } } : u)),
    }),
  },
  {
    name: "user delete cascades to the user's assignments",
    changes: [
      { kind: "user", op: "delete", data: { key: "alice" } },
      { kind: "user", op: "delete", data: { key: "dan" } },
    ],
    expected: (d) => ({
      ...d,
      users: d.users?.filter((u) => u.key !== "alice" && u.key !== "dan"),
      role_assignments: d.role_assignments?.filter((a) => a.user !== "alice" && a.user !== "dan"),
    }),
  },
  {
    name: "tenant upsert and an assignment in it",
    changes: [
      { kind: "tenant", op: "upsert", data: { key: "t3", attributes: { region: "eu" } } },
      { kind: "role_assignment", op: "upsert", data: { user: "jon", role: "admin", tenant: "t3" } },
    ],
    expected: (d) => ({
      ...d,
      tenants: [...(d.tenants ?? []), { key: "t3", attributes: { region: "eu" } }],
      role_assignments: [...(d.role_assignments ?? []), { user: "jon", role: "admin", tenant: "t3" }],
    }),
  },
  {
    name: "tenant delete cascades to tenant and instance assignments in it",
    changes: [{ kind: "tenant", op: "delete", data: { key: "t1" } }],
    expected: (d) => ({
      ...d,
      tenants: d.tenants?.filter((t) => t.key !== "t1"),
      role_assignments: d.role_assignments?.filter((a) => a.tenant !== "t1"),
    }),
  },
  {
    name: "role upsert changing permissions",
    changes: [
      {
        kind: "role",
        op: "upsert",
        data: { key: "reader", permissions: ["document:read", "document:write"] },
      },
    ],
    expected: (d) => ({
      ...d,
      roles: d.roles?.map((r) =>
        r.key === "reader" ? { key: "reader", permissions: ["document:read", "document:write"] } : r,
      ),
    }),
  },
  {
    name: "role delete cascades to its assignments and to extends",
    changes: [{ kind: "role", op: "delete", data: { key: "writer" } }],
    expected: (d) => ({
      ...d,
      roles: d.roles
        ?.filter((r) => r.key !== "writer")
        .map((r) => (r.key === "admin" ? { ...r, extends: [] } : r)),
      role_assignments: d.role_assignments?.filter((a) => !(a.role === "writer" && !a.resource_instance)),
    }),
  },
  {
    name: "resource upsert adding an action and a permission",
    changes: [
      {
        kind: "resource",
        op: "upsert",
        data: {
          ...resource(fixture, "document"),
          actions: [...resource(fixture, "document").actions, "share"],
          roles: { ...resource(fixture, "document").roles, sharer: { permissions: ["share"] } },
        },
      },
      {
        kind: "role_assignment",
        op: "upsert",
        data: { user: "fay", role: "sharer", tenant: "t1", resource_instance: "document:d1" },
      },
    ],
    expected: (d) => {
      const next = clone(d);
      const document = resource(next, "document");
      document.actions.push("share");
      (document.roles ??= {}).sharer = { permissions: ["share"] };
      next.role_assignments?.push({
        user: "fay",
        role: "sharer",
        tenant: "t1",
        resource_instance: "document:d1",
      });
      return next;
    },
  },
  {
    name: "resource upsert removing a role cascades to its assignments",
    changes: [
      {
        kind: "resource",
        op: "upsert",
        data: {
          ...resource(fixture, "folder"),
          roles: { editor: { ...resource(fixture, "folder").roles?.editor, extends: [] } },
        },
      },
    ],
    expected: (d) => {
      const next = clone(d);
      const folder = resource(next, "folder");
      folder.roles = { editor: { ...folder.roles?.editor, extends: [] } };
      next.role_assignments = next.role_assignments?.filter(
        (a) => !(a.role === "viewer" && a.resource_instance?.startsWith("folder:")),
      );
      return next;
    },
  },
  {
    name: "resource delete cascades to instances, tuples, assignments, relations, derivations and permissions",
    changes: [{ kind: "resource", op: "delete", data: { key: "folder" } }],
    expected: (d) => {
      const next = clone(d);
      next.resources = next.resources?.filter((r) => r.key !== "folder");
      const document = resource(next, "document");
      document.relations = {};
      for (const role of Object.values(document.roles ?? {})) {
        if (role.granted_to) role.granted_to.users_with_role = [];
      }
      next.roles = next.roles?.map((r) => ({
        ...r,
        permissions: r.permissions?.filter((p) => !p.startsWith("folder:")),
      }));
      const isFolder = (name: string | null | undefined) => name?.startsWith("folder:") ?? false;
      next.resource_instances = next.resource_instances?.filter((i) => i.resource !== "folder");
      next.relationship_tuples = next.relationship_tuples?.filter(
        (t) => !isFolder(t.subject) && !isFolder(t.object),
      );
      next.role_assignments = next.role_assignments?.filter((a) => !isFolder(a.resource_instance));
      return next;
    },
  },
  {
    name: "resource delete of a type with a bound resourceset removes the set and its rules",
    changes: [{ kind: "resource", op: "delete", data: { key: "document" } }],
    expected: (d) => {
      const next = clone(d);
      const isDocument = (name: string | null | undefined) => name?.startsWith("document:") ?? false;
      next.resources = next.resources?.filter((r) => r.key !== "document");
      next.roles = next.roles?.map((r) => ({
        ...r,
        permissions: r.permissions?.filter((p) => !isDocument(p)),
      }));
      next.condition_sets = next.condition_sets?.filter((s) => s.key !== "public_docs");
      next.condition_set_rules = [];
      next.resource_instances = next.resource_instances?.filter((i) => i.resource !== "document");
      next.relationship_tuples = next.relationship_tuples?.filter((t) => !isDocument(t.object));
      next.role_assignments = next.role_assignments?.filter((a) => !isDocument(a.resource_instance));
      return next;
    },
  },
  {
    name: "assignment upsert and delete (tenant and instance level)",
    changes: [
      {
        kind: "role_assignment",
        op: "upsert",
        data: { user: "fay", role: "editor", tenant: "t1", resource_instance: "folder:sub" },
      },
      {
        kind: "role_assignment",
        op: "delete",
        data: { user: "dan", role: "admin", tenant: "t1", resource_instance: "account:acme" },
      },
      { kind: "role_assignment", op: "delete", data: { user: "alice", role: "reader", tenant: "t1" } },
      { kind: "role_assignment", op: "upsert", data: { user: "jon", role: "reader", tenant: "t2" } },
    ],
    expected: (d) => ({
      ...d,
      role_assignments: [
        ...(d.role_assignments ?? []).filter(
          (a) => !(a.user === "dan" && a.role === "admin") && !(a.user === "alice" && a.role === "reader"),
        ),
        { user: "fay", role: "editor", tenant: "t1", resource_instance: "folder:sub" },
      ],
    }),
  },
  {
    name: "instance upsert changing attributes and creating an instance",
    changes: [
      {
        kind: "resource_instance",
        op: "upsert",
        data: { resource: "document", key: "d1", tenant: "t1", attributes: { public: true } },
      },
      { kind: "resource_instance", op: "upsert", data: { resource: "document", key: "d4", tenant: "t2" } },
    ],
    expected: (d) => ({
      ...d,
      resource_instances: [
        ...(d.resource_instances ?? []).map((i) =>
          i.key === "d1" ? { ...i, attributes: { public: true } } : i,
        ),
        { resource: "document", key: "d4", tenant: "t2" },
      ],
    }),
  },
  {
    name: "instance delete cascades to its tuples and assignments",
    changes: [{ kind: "resource_instance", op: "delete", data: { resource: "folder", key: "sub" } }],
    expected: (d) => ({
      ...d,
      resource_instances: d.resource_instances?.filter((i) => !(i.resource === "folder" && i.key === "sub")),
      relationship_tuples: d.relationship_tuples?.filter(
        (t) => t.subject !== "folder:sub" && t.object !== "folder:sub",
      ),
      role_assignments: d.role_assignments?.filter((a) => a.resource_instance !== "folder:sub"),
    }),
  },
  {
    name: "tuple upsert and delete",
    changes: [
      {
        kind: "relationship_tuple",
        op: "upsert",
        data: { subject: "folder:sub", relation: "parent", object: "document:d2", tenant: "t1" },
      },
      {
        kind: "relationship_tuple",
        op: "delete",
        data: { subject: "folder:root", relation: "parent", object: "folder:sub" },
      },
    ],
    expected: (d) => ({
      ...d,
      relationship_tuples: [
        ...(d.relationship_tuples ?? []).filter(
          (t) => !(t.subject === "folder:root" && t.object === "folder:sub"),
        ),
        { subject: "folder:sub", relation: "parent", object: "document:d2", tenant: "t1" },
      ],
    }),
  },
  {
    name: "tuple upsert creates missing instances in the tuple's tenant",
    changes: [
      {
        kind: "relationship_tuple",
        op: "upsert",
        data: { subject: "folder:new", relation: "parent", object: "document:newdoc", tenant: "t2" },
      },
      {
        kind: "role_assignment",
        op: "upsert",
        data: { user: "jon", role: "editor", tenant: "t2", resource_instance: "folder:new" },
      },
    ],
    expected: (d) => ({
      ...d,
      resource_instances: [
        ...(d.resource_instances ?? []),
        { resource: "folder", key: "new", tenant: "t2" },
        { resource: "document", key: "newdoc", tenant: "t2" },
      ],
      relationship_tuples: [
        ...(d.relationship_tuples ?? []),
        { subject: "folder:new", relation: "parent", object: "document:newdoc", tenant: "t2" },
      ],
      role_assignments: [
        ...(d.role_assignments ?? []),
        { user: "jon", role: "editor", tenant: "t2", resource_instance: "folder:new" },
      ],
    }),
  },
  {
    name: "condition set upsert changing conditions",
    changes: [
      {
        kind: "condition_set",
        op: "upsert",
        data: { key: "adults", type: "userset", conditions: { "user.age": { "greater-than": 10 } } },
      },
    ],
    expected: (d) => ({
      ...d,
      condition_sets: d.condition_sets?.map((s) =>
        s.key === "adults" ? { ...s, conditions: { "user.age": { "greater-than": 10 } } } : s,
      ),
    }),
  },
  {
    name: "condition set delete cascades to its rules",
    changes: [{ kind: "condition_set", op: "delete", data: { key: "adults" } }],
    expected: (d) => ({
      ...d,
      condition_sets: d.condition_sets?.filter((s) => s.key !== "adults"),
      condition_set_rules: [],
    }),
  },
  {
    name: "condition set rule upsert and delete",
    changes: [
      {
        kind: "condition_set_rule",
        op: "upsert",
        data: { user_set: "adults", permission: "document:editing", resource_set: "public_docs" },
      },
      {
        kind: "condition_set_rule",
        op: "delete",
        data: { user_set: "adults", permission: "document:read", resource_set: "public_docs" },
      },
    ],
    expected: (d) => ({
      ...d,
      condition_set_rules: [
        { user_set: "adults", permission: "document:editing", resource_set: "public_docs" },
      ],
    }),
  },
];

describe("incremental changes give the same answers as a fresh engine over the resulting data", () => {
  for (const scenario of scenarios) {
    test(scenario.name, () => {
      const expectedData = scenario.expected(clone(fixture));
      const queries = [
        ...new Map(
          [...allQueries(fixture, ["ghost", "zed"]), ...allQueries(expectedData)].map((q) => [
            JSON.stringify(q),
            q,
          ]),
        ).values(),
      ];
      const incremental = createEngine(fixture);
      incremental.applyAll(scenario.changes);
      const fresh = createEngine(expectedData);
      assert.equal(firstDifference(incremental, fresh, queries), undefined);
      // The scenario must change something, or it would prove nothing.
      assert.notEqual(firstDifference(createEngine(fixture), fresh, queries), undefined);
    });
  }

  test("load replaces everything", () => {
    const reloaded = createEngine({ users: [{ key: "x" }] });
    reloaded.load(fixture);
    assert.equal(firstDifference(reloaded, engine, allQueries(fixture)), undefined);
  });

  test("loadPage builds the same engine from pages of one fact each, in any order", () => {
    const pages: EnvironmentData[] = [];
    for (const [kind, list] of Object.entries(fixture) as [keyof EnvironmentData, unknown[]][]) {
      for (const item of list) pages.push({ [kind]: [item] });
    }
    assert.ok(pages.length > 20, `${pages.length} pages`);
    // Facts before the schema, and assignments and tuples before the instances and users they name.
    const paged = createEngine();
    for (const page of pages.reverse()) paged.loadPage(page);
    assert.equal(firstDifference(paged, engine, allQueries(fixture)), undefined);
    assert.notEqual(firstDifference(createEngine(), engine, allQueries(fixture)), undefined);
  });

  test("repeated upserts and deletes of absent facts are harmless", () => {
    const twice = createEngine(fixture);
    twice.applyAll([
      ...(fixture.role_assignments ?? []).map((data): Change => ({
        kind: "role_assignment",
        op: "upsert",
        data,
      })),
      ...(fixture.relationship_tuples ?? []).map((data): Change => ({
        kind: "relationship_tuple",
        op: "upsert",
        data,
      })),
      { kind: "role_assignment", op: "delete", data: { user: "nobody", role: "reader", tenant: "t1" } },
      {
        kind: "relationship_tuple",
        op: "delete",
        data: { subject: "folder:zz", relation: "parent", object: "document:zz" },
      },
      { kind: "user", op: "delete", data: { key: "nobody" } },
      { kind: "tenant", op: "delete", data: { key: "nowhere" } },
      { kind: "resource_instance", op: "delete", data: { resource: "document", key: "zz" } },
    ]);
    assert.equal(firstDifference(twice, engine, allQueries(fixture)), undefined);
  });
});

describe("URL mapping rules", () => {
  test("a rule whose regex nests repetition never runs, so a crafted URL cannot stall the PDP", async () => {
    const { matchUrl } = await import("../../src/pdp/engine/url-mapping.ts");
    const rule = (url: string) => ({
      url,
      url_type: "regex" as const,
      http_method: "get",
      resource: "doc",
      action: "read",
    });
    const crafted = `https://api.example.com/${"a".repeat(40)}!`;
    // Run as written, this pattern backtracks 2^40 times on the crafted URL; the engine refuses to run it.
    assert.equal(matchUrl([rule("^https://api\\.example\\.com/(a+)+$")], "GET", crafted), undefined);
    const safe = matchUrl(
      [rule("^https://api\\.example\\.com/(?P<id>a+)$")],
      "GET",
      "https://api.example.com/aaa",
    );
    assert.deepEqual(safe?.attributes, { id: "aaa" }, "a pattern without nesting still matches");
  });
});

describe("local role assignments (Permit's local API)", () => {
  test("pages of every size, concatenated, are the whole list: nothing skipped or repeated at user boundaries", () => {
    const all = engine.roleAssignments({}, 0, Number.MAX_SAFE_INTEGER);
    assert.ok(all.length >= 5, `the fixture holds assignments (${all.length})`);
    const users = all.map((a) => a.user);
    assert.ok(new Set(users).size >= 2, "of several users");
    for (let size = 1; size <= all.length; size++) {
      const pages = [];
      for (let skip = 0; skip < all.length; skip += size)
        pages.push(...engine.roleAssignments({}, skip, size));
      assert.deepEqual(pages, all, `page size ${size}`);
    }
    assert.deepEqual(engine.roleAssignments({}, all.length, 10), [], "past the end: empty");
    const first = all[0]!;
    assert.deepEqual(
      engine.roleAssignments({ user: first.user }, 0, 100),
      all.filter((a) => a.user === first.user),
      "a user's filter gives that user's run of the list",
    );
  });
});
