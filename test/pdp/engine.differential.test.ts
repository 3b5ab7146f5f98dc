// Differential test: random environments (tenant roles, resource roles with derivations, condition sets and set
// rules over user, resource and context attributes), thousands of random checks, decided by the engine and by a
// naive reference evaluator written straight from the contract: a fixpoint over all facts, conditions interpreted
// from their JSON, no indexes and no engine code. They must agree on every decision (allow, the reason's kind and a
// deny's code) before and after random changes of facts and schema, and the listings (/user-permissions,
// /authorized_users) must agree with the checks on every (user, resource) pair.
//
// Bounded and reproducible: a fixed seed by default; PDP_DIFF_SEED=<n> replays a run, PDP_DIFF_SEED=random explores.

import { test } from "node:test";
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import {
  createEngine,
  type Change,
  type CheckQuery,
  type Decision,
  type EnvironmentData,
  type QueryResource,
  type QueryUser,
  type ResourceData,
} from "../../src/pdp/engine/index.ts";
import { applyToReference, randomChanges } from "./random-changes.ts";
import {
  Random,
  TENANTS,
  SITES,
  UNSYNCED_KEYS,
  randomUserAttributes,
  randomEnvironment,
  liveTenants,
  randomCheck,
  typeOf,
  type Attributes,
} from "./random-environment.ts";

// ---- the reference evaluator (written from the contract; it shares no code with the engine) ----

/** Roles reachable through extends, the role included; cycle-safe. */
function closure(start: string, extendsOf: (key: string) => string[] | undefined): Set<string> {
  const seen = new Set([start]);
  const pending = [start];
  while (pending.length > 0) {
    for (const next of extendsOf(pending.pop() as string) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        pending.push(next);
      }
    }
  }
  return seen;
}

/** Whether naming `permission` (an action or an action group of the resource) grants `action`. */
function grantsAction(resource: ResourceData, permission: string, action: string): boolean {
  if (!resource.actions.includes(action)) return false;
  return permission === action || (resource.action_groups?.[permission] ?? []).includes(action);
}

function impliedResourceRoles(data: EnvironmentData, type: string, role: string): Set<string> {
  const roles = data.resources?.find((r) => r.key === type)?.roles ?? {};
  return closure(role, (k) => roles[k]?.extends?.filter((e) => roles[e] !== undefined));
}

/** "resource:action" strings a tenant role grants (with everything it extends), unexpanded. */
function tenantRolePermissions(data: EnvironmentData, role: string): string[] {
  return [...closure(role, (k) => data.roles?.find((r) => r.key === k)?.extends)].flatMap(
    (member) => data.roles?.find((r) => r.key === member)?.permissions ?? [],
  );
}

function tenantRoleGrants(
  data: EnvironmentData,
  role: string,
  resource: ResourceData,
  action: string,
): boolean {
  return tenantRolePermissions(data, role).some((permission) => {
    const [type, name] = permission.split(":") as [string, string];
    return type === resource.key && grantsAction(resource, name, action);
  });
}

function tenantRolesOf(data: EnvironmentData, user: string, tenant: string): string[] {
  return (data.role_assignments ?? [])
    .filter((a) => a.user === user && a.tenant === tenant && !a.resource_instance)
    .map((a) => a.role);
}

const heldRolesMemo = new WeakMap<EnvironmentData, Map<string, Set<string>>>();

/** "instance|role" for every role the user holds in the tenant, directly or derived: a plain fixpoint. */
function referenceHeldRoles(data: EnvironmentData, user: string, tenant: string): Set<string> {
  let memo = heldRolesMemo.get(data);
  if (memo === undefined) {
    memo = new Map();
    heldRolesMemo.set(data, memo);
  }
  const memoKey = `${user}|${tenant}`;
  const known = memo.get(memoKey);
  if (known !== undefined) return known;
  const resourceOf = (type: string) => data.resources?.find((r) => r.key === type);
  const direct = (data.role_assignments ?? []).filter(
    (a) => a.user === user && a.tenant === tenant && a.resource_instance,
  );
  const held = new Set(direct.map((a) => `${a.resource_instance}|${a.role}`));
  const holds = (instance: string, role: string) =>
    [...held].some((entry) => {
      const [name, heldRole] = entry.split("|") as [string, string];
      return name === instance && impliedResourceRoles(data, typeOf(instance), heldRole).has(role);
    });
  const hasDirect = (instance: string) => direct.some((a) => a.resource_instance === instance);
  let changed = true;
  while (changed) {
    changed = false;
    for (const tuple of data.relationship_tuples ?? []) {
      if (tuple.tenant !== tenant) continue;
      const objectResource = resourceOf(typeOf(tuple.object));
      for (const [roleKey, role] of Object.entries(objectResource?.roles ?? {})) {
        for (const rule of role.granted_to?.users_with_role ?? []) {
          if (rule.linked_by_relation !== tuple.relation || rule.on_resource !== typeOf(tuple.subject))
            continue;
          if (objectResource?.relations?.[tuple.relation] !== rule.on_resource) continue;
          if (resourceOf(rule.on_resource)?.roles?.[rule.role] === undefined) continue;
          const noDirect =
            rule.when?.no_direct_roles_on_object || role.granted_to?.when?.no_direct_roles_on_object;
          if (noDirect && hasDirect(tuple.object)) continue;
          const entry = `${tuple.object}|${roleKey}`;
          if (!held.has(entry) && holds(tuple.subject, rule.role)) {
            held.add(entry);
            changed = true;
          }
        }
      }
    }
  }
  memo.set(memoKey, held);
  return held;
}

/** Instance roles the user holds on the instance in the tenant (direct or derived, not through extends). */
function heldOn(data: EnvironmentData, user: string, tenant: string, instance: string): string[] {
  return [...referenceHeldRoles(data, user, tenant)]
    .map((entry) => entry.split("|") as [string, string])
    .filter(([name]) => name === instance)
    .map(([, role]) => role);
}

/** What a condition can read: the check, the stored user and instance, and the tenant the check runs in. */
interface ConditionScope {
  q: CheckQuery;
  storedUser: Attributes | undefined;
  storedResource: Attributes | undefined;
  tenant: string;
}

function own(object: unknown, name: string): unknown {
  return typeof object === "object" &&
    object !== null &&
    !Array.isArray(object) &&
    Object.hasOwn(object, name)
    ? (object as Attributes)[name]
    : undefined;
}

/** The value at a path: built-ins first, then request attributes over stored ones. */
function attributeAt(scope: ConditionScope, path: string): unknown {
  const [root, name = "", ...fields] = path.split(".");
  let value: unknown;
  if (root === "user") {
    const requested = own(scope.q.user.attributes, name);
    value =
      name === "key" ? scope.q.user.key : requested !== undefined ? requested : own(scope.storedUser, name);
  } else if (root === "resource") {
    const builtIn: Attributes = {
      type: scope.q.resource.type,
      key: scope.q.resource.key,
      tenant: scope.tenant,
    };
    const requested = own(scope.q.resource.attributes, name);
    value = Object.hasOwn(builtIn, name)
      ? builtIn[name]
      : requested !== undefined
        ? requested
        : own(scope.storedResource, name);
  } else if (root === "context") {
    value = own(scope.q.context, name);
  }
  for (const field of fields) value = own(value, field);
  return value;
}

function ordered(a: unknown, b: unknown, accept: (order: number) => boolean): boolean {
  if (typeof a === "number" && typeof b === "number") return accept(a - b);
  if (typeof a === "string" && typeof b === "string") return accept(a < b ? -1 : a > b ? 1 : 0);
  return false;
}

/** Permit's operators, as the contract describes them. `actual` is present. */
function operatorHolds(operator: string, actual: unknown, expected: unknown): boolean {
  const member = (list: unknown[], value: unknown) => list.some((item) => isDeepStrictEqual(item, value));
  const arrays = Array.isArray(actual) && Array.isArray(expected);
  const contains = () =>
    typeof actual === "string"
      ? typeof expected === "string" && actual.includes(expected)
      : Array.isArray(actual) && member(actual, expected);
  switch (operator) {
    case "equals":
      return isDeepStrictEqual(actual, expected);
    case "not-equals":
      return !isDeepStrictEqual(actual, expected);
    case "greater-than":
      return ordered(actual, expected, (o) => o > 0);
    case "greater-than-equals":
      return ordered(actual, expected, (o) => o >= 0);
    case "less-than":
      return ordered(actual, expected, (o) => o < 0);
    case "less-than-equals":
      return ordered(actual, expected, (o) => o <= 0);
    case "contains":
      return contains();
    case "not-contains":
      return (typeof actual === "string" || Array.isArray(actual)) && !contains();
    case "in":
      return Array.isArray(expected) && member(expected, actual);
    case "not-in":
      return Array.isArray(expected) && !member(expected, actual);
    case "array_contains":
    case "array-contains":
      return Array.isArray(actual) && member(actual, expected);
    case "array_subset":
      return arrays && (actual as unknown[]).every((item) => member(expected as unknown[], item));
    case "array_superset":
      return arrays && (expected as unknown[]).every((item) => member(actual as unknown[], item));
    case "array_intersect":
      return arrays && (actual as unknown[]).some((item) => member(expected as unknown[], item));
    case "starts-with":
      return typeof actual === "string" && typeof expected === "string" && actual.startsWith(expected);
    case "ends-with":
      return typeof actual === "string" && typeof expected === "string" && actual.endsWith(expected);
    default:
      throw new Error(`the generator made an unknown operator ${operator}`);
  }
}

/** Interprets a condition document directly: every key of a node must hold; a missing attribute never matches. */
function conditionHolds(node: unknown, scope: ConditionScope): boolean {
  return Object.entries(node as Attributes).every(([key, value]) => {
    if (key === "allOf") return (value as unknown[]).every((child) => conditionHolds(child, scope));
    if (key === "anyOf") return (value as unknown[]).some((child) => conditionHolds(child, scope));
    if (key === "not") return !conditionHolds(value, scope);
    return Object.entries(value as Attributes).every(([operator, operand]) => {
      const actual = attributeAt(scope, key);
      if (actual === undefined) return false;
      const ref = own(operand, "ref");
      return operatorHolds(operator, actual, typeof ref === "string" ? attributeAt(scope, ref) : operand);
    });
  });
}

function abacGrants(data: EnvironmentData, scope: ConditionScope, resource: ResourceData): boolean {
  const sets = data.condition_sets ?? [];
  return (data.condition_set_rules ?? []).some((rule) => {
    const colon = rule.permission.indexOf(":");
    if (rule.permission.slice(0, colon) !== resource.key) return false;
    if (!grantsAction(resource, rule.permission.slice(colon + 1), scope.q.action)) return false;
    const users = sets.find((s) => s.key === rule.user_set);
    const resources = sets.find((s) => s.key === rule.resource_set);
    if (users?.type !== "userset" || resources?.type !== "resourceset") return false;
    if (resources.resource && resources.resource !== resource.key) return false;
    return conditionHolds(users.conditions, scope) && conditionHolds(resources.conditions, scope);
  });
}

/** A decision as the contract describes it: allow with the kind of grant, or deny with its code. */
interface Verdict {
  allow: boolean;
  kind: "rbac" | "rebac" | "abac" | "deny";
  code?: string;
}

function verdictOf(decision: Decision): Verdict {
  const { allow, reason } = decision;
  return reason.kind === "deny"
    ? { allow, kind: reason.kind, code: reason.code }
    : { allow, kind: reason.kind };
}

function referenceDecide(data: EnvironmentData, q: CheckQuery): Verdict {
  const deny = (code: string): Verdict => ({ allow: false, kind: "deny", code });
  const resource = data.resources?.find((r) => r.key === q.resource.type);
  if (resource === undefined) return deny("UNKNOWN_RESOURCE_TYPE");
  if (!resource.actions.includes(q.action)) return deny("UNKNOWN_ACTION");
  // Without a synced instance the check runs in the tenant the request names (default when none).
  let tenant = q.resource.tenant || "default";
  const target = q.resource.key ? `${q.resource.type}:${q.resource.key}` : undefined;
  const instance = data.resource_instances?.find((i) => `${i.resource}:${i.key}` === target);
  if (instance !== undefined) {
    if (q.resource.tenant && q.resource.tenant !== "default" && q.resource.tenant !== instance.tenant)
      return deny("TENANT_MISMATCH");
    tenant = instance.tenant;
  }
  const user = q.user.key;
  if (tenantRolesOf(data, user, tenant).some((role) => tenantRoleGrants(data, role, resource, q.action)))
    return { allow: true, kind: "rbac" };
  if (instance !== undefined && target !== undefined) {
    for (const held of heldOn(data, user, tenant, target)) {
      for (const member of impliedResourceRoles(data, resource.key, held)) {
        const permissions = resource.roles?.[member]?.permissions ?? [];
        if (permissions.some((p) => grantsAction(resource, p, q.action)))
          return { allow: true, kind: "rebac" };
      }
    }
  }
  const storedUser = data.users?.find((u) => u.key === user);
  const scope = {
    q,
    storedUser: storedUser?.attributes ?? undefined,
    storedResource: instance?.attributes ?? undefined,
    tenant,
  };
  if (abacGrants(data, scope, resource)) return { allow: true, kind: "abac" };
  if (storedUser === undefined) return deny("UNKNOWN_USER");
  if (!(data.tenants ?? []).some((t) => t.key === tenant)) return deny("UNKNOWN_TENANT");
  if (target !== undefined && instance === undefined) return deny("UNKNOWN_INSTANCE");
  const hasRole =
    tenantRolesOf(data, user, tenant).length > 0 ||
    (target !== undefined && heldOn(data, user, tenant, target).length > 0);
  return deny(hasRole ? "NO_PERMISSION" : "NO_ROLE_IN_TENANT");
}

// ---- the test ----

const DEFAULT_SEED = 20261124;
const ENVIRONMENTS = 25;
const CHECKS_PER_ENVIRONMENT = 80;
const CHANGE_ROUNDS = 3;
const CHANGES_PER_ROUND = 8;
const CHECKS_PER_ROUND = 40;

interface Tally {
  checks: number;
  allowed: number;
  derived: number;
  abac: number;
  unsyncedAllowed: number;
  listedPairs: number;
}

function assertSameVerdict(actual: Decision, expected: Verdict, q: CheckQuery, where: string): void {
  const verdict = verdictOf(actual);
  // Cheap comparison first: the message is built only for a failure.
  if (verdict.allow === expected.allow && verdict.kind === expected.kind && verdict.code === expected.code)
    return;
  assert.deepEqual(
    verdict,
    expected,
    `${where}: engine says ${JSON.stringify(actual)} for ${JSON.stringify(q)}; the reference says ${JSON.stringify(expected)}`,
  );
}

function compare(
  engine: ReturnType<typeof createEngine>,
  data: EnvironmentData,
  checks: CheckQuery[],
  where: string,
  tally: Tally,
) {
  for (const q of checks) {
    const decision = engine.check(q);
    tally.checks++;
    if (decision.allow) tally.allowed++;
    if (decision.reason.kind === "rebac" && decision.reason.via.length > 0) tally.derived++;
    if (decision.reason.kind === "abac") tally.abac++;
    const synced = data.resource_instances?.some(
      (i) => i.resource === q.resource.type && i.key === q.resource.key,
    );
    if (decision.allow && q.resource.key !== undefined && !synced) tally.unsyncedAllowed++;
    assertSameVerdict(decision, referenceDecide(data, q), q, where);
  }
}

function sortedEntries<T>(entries: Iterable<[string, T]>): Record<string, T> {
  return Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Every (user, resource, action) pair, decided by the engine's check and by the reference: a resource type in
 * each tenant, each instance, and instances the engine does not hold. The listings must say exactly what the
 * checks allow: /user-permissions per user (its roles too) and /authorized_users per resource and action.
 */
function compareListings(
  engine: ReturnType<typeof createEngine>,
  data: EnvironmentData,
  random: Random,
  where: string,
  tally: Tally,
) {
  const context = random.chance(0.5) ? { site: random.pick(SITES) } : {};
  const liveTenantKeys = liveTenants(data);
  const resources = data.resources ?? [];
  const targets: { name: string; resource: QueryResource; tenant: string; listed: boolean }[] = [
    ...resources.flatMap((r) =>
      TENANTS.map((tenant) => ({
        name: `__tenant:${tenant}`,
        resource: { type: r.key, tenant },
        tenant,
        listed: liveTenantKeys.includes(tenant),
      })),
    ),
    ...(data.resource_instances ?? []).map((i) => ({
      name: `${i.resource}:${i.key}`,
      resource: { type: i.resource, key: i.key },
      tenant: i.tenant,
      listed: liveTenantKeys.includes(i.tenant),
    })),
    ...resources.map((r) => {
      const tenant = random.pick(TENANTS);
      return {
        name: "",
        resource: { type: r.key, key: random.pick(UNSYNCED_KEYS), tenant },
        tenant,
        listed: false,
      };
    }),
  ];
  // A user the engine does not know, with attributes in the request: only condition-set rules can grant.
  const users: QueryUser[] = [
    ...(data.users ?? []).map((u) => ({ key: u.key })),
    { key: "stranger", attributes: randomUserAttributes(random) },
  ];
  const expectedPermissions = new Map(users.map((u) => [u.key, new Map<string, Set<string>>()]));
  for (const target of targets) {
    const resource = resources.find((r) => r.key === target.resource.type) as ResourceData;
    for (const action of resource.actions) {
      const allowed: string[] = [];
      for (const user of users) {
        const q: CheckQuery = { user, action, resource: target.resource, context };
        const expected = referenceDecide(data, q);
        assertSameVerdict(engine.check(q), expected, q, `${where}, every pair`);
        tally.listedPairs++;
        if (!expected.allow) continue;
        if (user.key !== "stranger") allowed.push(user.key);
        if (!target.listed) continue;
        const byEntry = expectedPermissions.get(user.key) as Map<string, Set<string>>;
        byEntry.set(target.name, new Set([...(byEntry.get(target.name) ?? []), `${resource.key}:${action}`]));
      }
      const listing = engine.authorizedUsers({ action, resource: target.resource, context });
      assert.deepEqual(
        Object.keys(listing.users),
        allowed.sort(),
        `${where}: authorizedUsers of ${action} on ${JSON.stringify(target.resource)} with context ${JSON.stringify(context)}`,
      );
    }
  }
  for (const user of users) {
    const listed = engine.userPermissions({ user, context });
    const byEntry = expectedPermissions.get(user.key) as Map<string, Set<string>>;
    const expected = new Map<string, { permissions: string[]; roles: string[] }>();
    for (const tenant of liveTenantKeys) {
      const name = `__tenant:${tenant}`;
      const roles = [...new Set(tenantRolesOf(data, user.key, tenant))].sort();
      const permissions = [...(byEntry.get(name) ?? [])].sort();
      if (roles.length > 0 || permissions.length > 0) expected.set(name, { permissions, roles });
    }
    for (const instance of data.resource_instances ?? []) {
      if (!liveTenantKeys.includes(instance.tenant)) continue;
      const name = `${instance.resource}:${instance.key}`;
      const resource = resources.find((r) => r.key === instance.resource) as ResourceData;
      // Roles on an instance: the instance roles held there and the tenant roles granting something on it.
      const tenantRoles = tenantRolesOf(data, user.key, instance.tenant).filter((role) =>
        resource.actions.some((action) => tenantRoleGrants(data, role, resource, action)),
      );
      const roles = [...new Set([...heldOn(data, user.key, instance.tenant, name), ...tenantRoles])].sort();
      const permissions = [...(byEntry.get(name) ?? [])].sort();
      if (roles.length > 0 || permissions.length > 0) expected.set(name, { permissions, roles });
    }
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(listed).map(([name, entry]) => [
          name,
          { permissions: entry.permissions, roles: entry.roles },
        ]),
      ),
      sortedEntries(expected),
      `${where}: userPermissions of ${JSON.stringify(user)} with context ${JSON.stringify(context)}`,
    );
  }
}

function seedOf(): number {
  const configured = process.env.PDP_DIFF_SEED;
  if (configured === undefined || configured === "") return DEFAULT_SEED;
  if (configured === "random") return (Date.now() ^ (Math.random() * 2 ** 31)) >>> 0;
  return Number(configured);
}

test("the engine agrees with the naive reference evaluator on random environments", (t) => {
  const seed = seedOf();
  const random = new Random(seed);
  const tally: Tally = { checks: 0, allowed: 0, derived: 0, abac: 0, unsyncedAllowed: 0, listedPairs: 0 };
  try {
    for (let env = 0; env < ENVIRONMENTS; env++) {
      let data = randomEnvironment(random);
      const engine = createEngine(data);
      const checks = Array.from({ length: CHECKS_PER_ENVIRONMENT }, () => randomCheck(random, data));
      compare(engine, data, checks, `environment ${env}`, tally);
      compareListings(engine, data, random, `environment ${env}`, tally);
      for (let round = 0; round < CHANGE_ROUNDS; round++) {
        const applied: Change[] = [];
        for (let i = 0; i < CHANGES_PER_ROUND; i++) {
          for (const change of randomChanges(random, data)) {
            engine.apply(change);
            data = applyToReference(data, change);
            applied.push(change);
          }
        }
        const where = `environment ${env} after ${round + 1} rounds of changes (last: ${JSON.stringify(applied.slice(-CHANGES_PER_ROUND))})`;
        const roundChecks = Array.from({ length: CHECKS_PER_ROUND }, () => randomCheck(random, data));
        compare(engine, data, roundChecks, where, tally);
        // Listings walk every pair; after the last round is enough to cover changed indexes.
        if (round === CHANGE_ROUNDS - 1) compareListings(engine, data, random, where, tally);
        compare(
          createEngine(data),
          data,
          roundChecks,
          `environment ${env}, fresh engine after changes`,
          tally,
        );
      }
    }
  } catch (error) {
    assert.fail(`PDP_DIFF_SEED=${seed}: ${(error as Error).message}`);
  }
  t.diagnostic(`seed ${seed}: ${JSON.stringify(tally)}`);
  assert.ok(tally.checks >= 7500, `only ${tally.checks} checks`);
  // Guards against a generator that stopped producing what makes agreement meaningful.
  assert.ok(
    tally.allowed > tally.checks / 5,
    `only ${tally.allowed} of ${tally.checks} allowed (seed ${seed})`,
  );
  // Derived grants vary a lot between seeds (0.8% to several % of checks); the guard only has to catch a generator
  // that stopped producing derivations at all.
  assert.ok(tally.derived >= 25, `only ${tally.derived} derived grants (seed ${seed})`);
  assert.ok(tally.abac >= 20, `only ${tally.abac} condition-set grants (seed ${seed})`);
  assert.ok(
    tally.unsyncedAllowed >= 25,
    `only ${tally.unsyncedAllowed} allows on unsynced instances (seed ${seed})`,
  );
  assert.ok(tally.listedPairs >= 20000, `only ${tally.listedPairs} listed pairs (seed ${seed})`);
});
