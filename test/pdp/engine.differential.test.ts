// Differential test: random environments, thousands of random checks, decided by the engine and by a naive
// reference evaluator written straight from the contract (a fixpoint over all facts, no indexes). They must agree
// on every allow, before and after random incremental changes. Set PDP_DIFF_SEED to replay one run.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  createEngine,
  type Change,
  type CheckQuery,
  type EnvironmentData,
  type ResourceData,
  type RoleAssignmentData,
} from "../../src/pdp/engine/index.ts";

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Random {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from nothing");
    return items[this.int(items.length)] as T;
  }
  some<T>(items: readonly T[], p: number): T[] {
    return items.filter(() => this.chance(p));
  }
}

const TENANTS = ["default", "t1", "t2"];

// ---- random environments ----

function randomEnvironment(random: Random): EnvironmentData {
  const typeCount = 2 + random.int(3);
  const types = Array.from({ length: typeCount }, (_, i) => `r${i}`);
  const resources: ResourceData[] = types.map((key) => {
    const actions = Array.from({ length: 2 + random.int(3) }, (_, i) => `a${i}`);
    const groups: Record<string, string[]> = random.chance(0.5) ? { g0: random.some(actions, 0.5) } : {};
    return { key, actions, action_groups: groups, roles: {}, relations: {} };
  });
  for (const resource of resources) {
    const relationCount = random.int(3);
    for (let i = 0; i < relationCount; i++) (resource.relations ??= {})[`rel${i}`] = random.pick(types);
    const roleKeys = Array.from({ length: 1 + random.int(3) }, (_, i) => `k${i}`);
    const permissionNames = [...resource.actions, ...Object.keys(resource.action_groups ?? {})];
    for (const roleKey of roleKeys) {
      (resource.roles ??= {})[roleKey] = {
        permissions: random.some(permissionNames, 0.5),
        extends: random.some(roleKeys, 0.3),
      };
    }
  }
  // Derivation rules need every resource's roles and relations to exist first.
  for (const resource of resources) {
    for (const role of Object.values(resource.roles ?? {})) {
      const relations = Object.entries(resource.relations ?? {});
      if (relations.length === 0 || random.chance(0.3)) continue;
      const rules = Array.from({ length: 1 + random.int(2) }, () => {
        const [relation, subject] = random.pick(relations);
        const subjectRoles = Object.keys(resources.find((r) => r.key === subject)?.roles ?? {});
        return {
          role: random.pick(subjectRoles),
          on_resource: subject,
          linked_by_relation: relation,
          ...(random.chance(0.2) ? { when: { no_direct_roles_on_object: true } } : {}),
        };
      });
      role.granted_to = {
        users_with_role: rules,
        ...(random.chance(0.15) ? { when: { no_direct_roles_on_object: true } } : {}),
      };
    }
  }
  const tenantRoleKeys = Array.from({ length: 2 + random.int(3) }, (_, i) => `tr${i}`);
  const allPermissions = resources.flatMap((r) =>
    [...r.actions, ...Object.keys(r.action_groups ?? {})].map((a) => `${r.key}:${a}`),
  );
  const roles = tenantRoleKeys.map((key) => ({
    key,
    permissions: random.some(allPermissions, 0.25),
    extends: random.some(tenantRoleKeys, 0.25),
  }));
  const users = Array.from({ length: 6 + random.int(5) }, (_, i) => ({ key: `u${i}` }));
  const resource_instances = resources.flatMap((r) =>
    Array.from({ length: 3 + random.int(4) }, (_, i) => ({
      resource: r.key,
      key: `i${i}`,
      tenant: random.pick(TENANTS),
    })),
  );
  const data: EnvironmentData = {
    resources,
    roles,
    users,
    tenants: TENANTS.map((key) => ({ key })),
    resource_instances,
    relationship_tuples: [],
    role_assignments: [],
  };
  for (let i = 0, n = 10 + random.int(25); i < n; i++) {
    const tuple = randomTuple(random, data);
    if (tuple !== undefined) data.relationship_tuples?.push(tuple);
  }
  for (let i = 0, n = 10 + random.int(25); i < n; i++) {
    const assignment = randomAssignment(random, data);
    if (assignment !== undefined) data.role_assignments?.push(assignment);
  }
  data.relationship_tuples = dedupe(
    data.relationship_tuples ?? [],
    (t) => `${t.subject}|${t.relation}|${t.object}`,
  );
  data.role_assignments = dedupe(data.role_assignments ?? [], assignmentKey);
  return data;
}

function dedupe<T>(items: T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(key(item), item);
  return [...byKey.values()];
}

function assignmentKey(a: RoleAssignmentData): string {
  return a.resource_instance
    ? `${a.user}|${a.role}|${a.resource_instance}`
    : `${a.user}|${a.role}|${a.tenant}|`;
}

function instanceNames(data: EnvironmentData): { name: string; type: string; tenant: string }[] {
  return (data.resource_instances ?? []).map((i) => ({
    name: `${i.resource}:${i.key}`,
    type: i.resource,
    tenant: i.tenant,
  }));
}

/** The API only accepts facts naming existing tenants, so generated facts use tenants that still exist. */
function liveTenants(data: EnvironmentData): string[] {
  return (data.tenants ?? []).map((t) => t.key);
}

function randomTuple(random: Random, data: EnvironmentData) {
  const tenants = liveTenants(data);
  const instances = instanceNames(data);
  const objects = instances.filter((i) => tenants.includes(i.tenant));
  if (objects.length === 0) return undefined;
  const object = random.pick(objects);
  const relations = Object.entries(data.resources?.find((r) => r.key === object.type)?.relations ?? {});
  if (relations.length === 0) return undefined;
  const [relation, subjectType] = random.pick(relations);
  const subjects = instances.filter((i) => i.type === subjectType);
  if (subjects.length === 0) return undefined;
  const subject = random.pick(subjects);
  // Mostly consistent tenants, sometimes a tuple in another tenant (it must not derive across tenants).
  const tenant = random.chance(0.9) ? object.tenant : random.pick(tenants);
  return { subject: subject.name, relation, object: object.name, tenant };
}

function randomAssignment(random: Random, data: EnvironmentData): RoleAssignmentData | undefined {
  const tenants = liveTenants(data);
  const users = data.users ?? [];
  if (tenants.length === 0 || users.length === 0) return undefined;
  const user = random.pick(users).key;
  const instances = instanceNames(data).filter((i) => tenants.includes(i.tenant));
  if ((data.roles ?? []).length > 0 && (instances.length === 0 || random.chance(0.35))) {
    return { user, role: random.pick(data.roles ?? []).key, tenant: random.pick(tenants) };
  }
  if (instances.length === 0) return undefined;
  const instance = random.pick(instances);
  const roleKeys = Object.keys(data.resources?.find((r) => r.key === instance.type)?.roles ?? {});
  const tenant = random.chance(0.9) ? instance.tenant : random.pick(tenants);
  return { user, role: random.pick(roleKeys), tenant, resource_instance: instance.name };
}

/** A check aimed near some assignment (its tenant, its instance or a few tuples downstream) or anywhere. */
function randomCheck(random: Random, data: EnvironmentData): CheckQuery {
  const assignments = data.role_assignments ?? [];
  if (assignments.length > 0 && random.chance(0.6)) {
    const assignment = random.pick(assignments);
    const assigned = assignment.resource_instance;
    if (!assigned) {
      const resource = random.pick(data.resources ?? []);
      const action = random.pick(resource.actions);
      return {
        user: { key: assignment.user },
        action,
        resource: { type: resource.key, tenant: assignment.tenant },
      };
    }
    let instance: string = assigned;
    for (let hops = random.int(4); hops > 0; hops--) {
      const from = instance;
      const next = (data.relationship_tuples ?? []).filter((t) => t.subject === from);
      if (next.length === 0) break;
      instance = random.pick(next).object;
    }
    const [type, key] = instance.split(":") as [string, string];
    const actions = data.resources?.find((r) => r.key === type)?.actions ?? ["a0"];
    return { user: { key: assignment.user }, action: random.pick(actions), resource: { type, key } };
  }
  const users = (data.users ?? []).map((u) => u.key);
  const user = users.length === 0 || random.chance(0.05) ? "stranger" : random.pick(users);
  const resource = random.chance(0.03) ? undefined : random.pick(data.resources ?? []);
  const type = resource?.key ?? "undefined_type";
  const action = random.chance(0.05) ? "undefined_action" : random.pick(resource?.actions ?? ["a0"]);
  if (random.chance(0.3))
    return { user: { key: user }, action, resource: { type, tenant: random.pick(TENANTS) } };
  const instances = instanceNames(data).filter((i) => i.type === type);
  const key =
    instances.length === 0 || random.chance(0.03) ? "missing" : random.pick(instances).name.split(":")[1];
  const tenant = random.chance(0.2) ? random.pick(TENANTS) : undefined;
  return { user: { key: user }, action, resource: { type, key, ...(tenant ? { tenant } : {}) } };
}

// ---- the reference evaluator ----

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

function grantsAction(resource: ResourceData, permission: string, action: string): boolean {
  if (permission === action) return resource.actions.includes(action);
  return (resource.action_groups?.[permission] ?? []).includes(action) && resource.actions.includes(action);
}

function referenceAllows(data: EnvironmentData, q: CheckQuery): boolean {
  const resource = data.resources?.find((r) => r.key === q.resource.type);
  if (resource === undefined || !resource.actions.includes(q.action)) return false;
  let tenant = q.resource.tenant || "default";
  const target = q.resource.key === undefined ? undefined : `${q.resource.type}:${q.resource.key}`;
  if (target !== undefined) {
    const instance = data.resource_instances?.find((i) => `${i.resource}:${i.key}` === target);
    if (instance === undefined) return false;
    if (q.resource.tenant && q.resource.tenant !== "default" && q.resource.tenant !== instance.tenant)
      return false;
    tenant = instance.tenant;
  }
  const user = q.user.key;

  // RBAC: a tenant role (with everything it extends) assigned in the tenant names the permission.
  for (const assignment of data.role_assignments ?? []) {
    if (assignment.user !== user || assignment.tenant !== tenant || assignment.resource_instance) continue;
    const roles = closure(assignment.role, (k) => data.roles?.find((r) => r.key === k)?.extends);
    for (const roleKey of roles) {
      for (const permission of data.roles?.find((r) => r.key === roleKey)?.permissions ?? []) {
        const [permissionType, name] = permission.split(":") as [string, string];
        if (permissionType === resource.key && grantsAction(resource, name, q.action)) return true;
      }
    }
  }
  if (target === undefined) return false;

  // ReBAC: a role held on the instance (or implied by one held, through extends) names the permission.
  for (const entry of referenceHeldRoles(data, user, tenant)) {
    const [name, roleKey] = entry.split("|") as [string, string];
    if (name !== target) continue;
    for (const member of impliedResourceRoles(data, resource.key, roleKey)) {
      const permissions = resource.roles?.[member]?.permissions ?? [];
      if (permissions.some((p) => grantsAction(resource, p, q.action))) return true;
    }
  }
  return false;
}

function typeOf(instance: string): string {
  return instance.split(":")[0] as string;
}

function impliedResourceRoles(data: EnvironmentData, type: string, role: string): Set<string> {
  const roles = data.resources?.find((r) => r.key === type)?.roles ?? {};
  return closure(role, (k) => roles[k]?.extends?.filter((e) => roles[e] !== undefined));
}

/** "instance|role" for every role the user holds in the tenant, directly or derived: a plain fixpoint. */
function referenceHeldRoles(data: EnvironmentData, user: string, tenant: string): Set<string> {
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
  return held;
}

/** The user's /user-permissions entries reduced to entry name -> sorted roles. */
function referenceRolesByEntry(data: EnvironmentData, user: string): Record<string, string[]> {
  const entries = new Map<string, Set<string>>();
  const add = (name: string, role: string) =>
    entries.set(name, new Set([...(entries.get(name) ?? []), role]));
  for (const a of data.role_assignments ?? []) {
    if (a.user === user && !a.resource_instance) add(`__tenant:${a.tenant}`, a.role);
  }
  for (const tenant of TENANTS) {
    for (const entry of referenceHeldRoles(data, user, tenant)) {
      const [name, role] = entry.split("|") as [string, string];
      const instance = data.resource_instances?.find((i) => `${i.resource}:${i.key}` === name);
      if (instance?.tenant === tenant) add(name, role);
    }
  }
  return Object.fromEntries(
    [...entries].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, [...v].sort()]),
  );
}

// ---- random changes, applied to the engine and (with the contract's cascades) to the reference data ----

function randomChange(random: Random, data: EnvironmentData): Change | undefined {
  const assignments = data.role_assignments ?? [];
  const tuples = data.relationship_tuples ?? [];
  const roles = data.roles ?? [];
  const users = data.users ?? [];
  if (users.length === 0 || (data.resource_instances ?? []).length === 0) return undefined;
  switch (random.int(10)) {
    case 0:
    case 1: {
      const assignment = randomAssignment(random, data);
      return assignment === undefined
        ? undefined
        : { kind: "role_assignment", op: "upsert", data: assignment };
    }
    case 2:
      return assignments.length === 0
        ? undefined
        : { kind: "role_assignment", op: "delete", data: random.pick(assignments) };
    case 3:
    case 4: {
      const tuple = randomTuple(random, data);
      return tuple === undefined ? undefined : { kind: "relationship_tuple", op: "upsert", data: tuple };
    }
    case 5:
      return tuples.length === 0
        ? undefined
        : { kind: "relationship_tuple", op: "delete", data: random.pick(tuples) };
    case 6: {
      const instance = random.pick(instanceNames(data));
      const [resource, key] = instance.name.split(":") as [string, string];
      return { kind: "resource_instance", op: "delete", data: { resource, key } };
    }
    case 7:
      return random.chance(0.5)
        ? { kind: "user", op: "delete", data: { key: random.pick(users).key } }
        : { kind: "tenant", op: "delete", data: { key: random.pick(TENANTS) } };
    case 8: {
      if (roles.length === 0) return undefined;
      const permissions = (data.resources ?? []).flatMap((r) => r.actions.map((a) => `${r.key}:${a}`));
      return {
        kind: "role",
        op: "upsert",
        data: { ...random.pick(roles), permissions: random.some(permissions, 0.3) },
      };
    }
    default:
      return roles.length === 0
        ? undefined
        : { kind: "role", op: "delete", data: { key: random.pick(roles).key } };
  }
}

function applyToReference(data: EnvironmentData, change: Change): EnvironmentData {
  const next = structuredClone(data);
  const named = (instance: string) => (a: RoleAssignmentData) => a.resource_instance === instance;
  switch (change.kind) {
    case "role_assignment": {
      const others = (next.role_assignments ?? []).filter(
        (a) => assignmentKey(a) !== assignmentKey(change.data),
      );
      next.role_assignments = change.op === "upsert" ? [...others, change.data] : others;
      return next;
    }
    case "relationship_tuple": {
      const same = (t: { subject: string; relation: string; object: string }) =>
        t.subject === change.data.subject &&
        t.relation === change.data.relation &&
        t.object === change.data.object;
      const others = (next.relationship_tuples ?? []).filter((t) => !same(t));
      next.relationship_tuples = change.op === "upsert" ? [...others, change.data] : others;
      return next;
    }
    case "resource_instance": {
      if (change.op !== "delete") throw new Error("not generated");
      const name = `${change.data.resource}:${change.data.key}`;
      next.resource_instances = next.resource_instances?.filter((i) => `${i.resource}:${i.key}` !== name);
      next.relationship_tuples = next.relationship_tuples?.filter(
        (t) => t.subject !== name && t.object !== name,
      );
      next.role_assignments = next.role_assignments?.filter((a) => !named(name)(a));
      return next;
    }
    case "user":
      next.users = next.users?.filter((u) => u.key !== change.data.key);
      next.role_assignments = next.role_assignments?.filter((a) => a.user !== change.data.key);
      return next;
    case "tenant":
      next.tenants = next.tenants?.filter((t) => t.key !== change.data.key);
      next.role_assignments = next.role_assignments?.filter((a) => a.tenant !== change.data.key);
      return next;
    case "role":
      if (change.op === "upsert") {
        next.roles = next.roles?.map((r) => (r.key === change.data.key ? change.data : r));
      } else {
        const key = change.data.key;
        next.roles = next.roles
          ?.filter((r) => r.key !== key)
          .map((r) => ({ ...r, extends: r.extends?.filter((e) => e !== key) }));
        next.role_assignments = next.role_assignments?.filter((a) => a.resource_instance || a.role !== key);
      }
      return next;
    default:
      throw new Error(`not generated: ${change.kind}`);
  }
}

// ---- the test ----

const ENVIRONMENTS = 40;
const CHECKS_PER_ENVIRONMENT = 90;
const CHANGE_ROUNDS = 3;
const CHANGES_PER_ROUND = 6;
const CHECKS_PER_ROUND = 40;

interface Tally {
  checks: number;
  allowed: number;
  derived: number;
}

/** Listings use other algorithms than checks (a forward closure, per-user searches), so compare them too. */
function compareListings(
  engine: ReturnType<typeof createEngine>,
  data: EnvironmentData,
  random: Random,
  where: string,
) {
  const users = (data.users ?? []).map((u) => u.key);
  for (const user of users) {
    const listed = Object.fromEntries(
      Object.entries(engine.userPermissions({ user: { key: user } })).map(([name, entry]) => [
        name,
        entry.roles,
      ]),
    );
    assert.deepEqual(listed, referenceRolesByEntry(data, user), `${where}: userPermissions of ${user}`);
  }
  for (let i = 0; i < 5; i++) {
    const q = randomCheck(random, data);
    if (q.resource.key === undefined) continue;
    const listed = Object.keys(engine.authorizedUsers({ action: q.action, resource: q.resource }).users);
    const expected = users.filter((user) => referenceAllows(data, { ...q, user: { key: user } }));
    assert.deepEqual(listed, expected.sort(), `${where}: authorizedUsers ${JSON.stringify(q)}`);
  }
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
    const expected = referenceAllows(data, q);
    assert.equal(
      decision.allow,
      expected,
      `${where}: engine says ${JSON.stringify(decision)} for ${JSON.stringify(q)}; the reference says ${expected}`,
    );
  }
}

test("the engine agrees with the naive reference evaluator on random environments", () => {
  const seed =
    process.env.PDP_DIFF_SEED === undefined
      ? (Date.now() ^ (Math.random() * 2 ** 31)) >>> 0
      : Number(process.env.PDP_DIFF_SEED);
  const random = new Random(seed);
  const tally: Tally = { checks: 0, allowed: 0, derived: 0 };
  try {
    for (let env = 0; env < ENVIRONMENTS; env++) {
      let data = randomEnvironment(random);
      const engine = createEngine(data);
      const checks = Array.from({ length: CHECKS_PER_ENVIRONMENT }, () => randomCheck(random, data));
      compare(engine, data, checks, `environment ${env}`, tally);
      compareListings(engine, data, random, `environment ${env}`);
      for (let round = 0; round < CHANGE_ROUNDS; round++) {
        for (let i = 0; i < CHANGES_PER_ROUND; i++) {
          const change = randomChange(random, data);
          if (change === undefined) continue;
          engine.apply(change);
          data = applyToReference(data, change);
        }
        const roundChecks = Array.from({ length: CHECKS_PER_ROUND }, () => randomCheck(random, data));
        compare(engine, data, roundChecks, `environment ${env} after ${round + 1} rounds of changes`, tally);
        compareListings(engine, data, random, `environment ${env} after ${round + 1} rounds of changes`);
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
  assert.ok(tally.checks >= 5000, `only ${tally.checks} checks`);
  // Guard against a generator that only produces denials, which would make agreement meaningless.
  assert.ok(
    tally.allowed > tally.checks / 4,
    `only ${tally.allowed} of ${tally.checks} allowed (seed ${seed})`,
  );
  // Derived grants vary a lot between seeds (0.8% to several % of checks); the guard only has to catch a generator
  // that stopped producing derivations at all.
  assert.ok(tally.derived >= 25, `only ${tally.derived} derived grants (seed ${seed})`);
});
