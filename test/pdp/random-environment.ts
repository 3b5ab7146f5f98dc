// Random environments for the engine's differential tests (engine.differential.test.ts, filter-plan tests):
// tenant roles, resource roles with derivations, relationship tuples, condition sets over every operator, and
// checks aimed near the generated grants. Reproducible from a seed.

import type {
  CheckQuery,
  ConditionSetData,
  ConditionSetRuleData,
  EnvironmentData,
  ResourceData,
  RoleAssignmentData,
} from "../../src/pdp/engine/index.ts";

export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Random {
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

export const TENANTS = ["default", "t1", "t2"];
export const TIERS = ["free", "pro", "enterprise"];
export const TAGS = ["red", "green", "blue"];
export const SITES = ["hq", "branch", "home"];
export const UNSYNCED_KEYS = ["not-synced-1", "not-synced-2"];

// ---- random attributes and conditions ----

export type Attributes = Record<string, unknown>;

export function randomUserAttributes(random: Random): Attributes {
  const attributes: Attributes = {};
  if (random.chance(0.7)) attributes["age"] = random.int(60);
  if (random.chance(0.6)) attributes["tier"] = random.pick(TIERS);
  if (random.chance(0.5)) attributes["tags"] = random.some(TAGS, 0.5);
  return attributes;
}

export function randomResourceAttributes(random: Random, users: string[]): Attributes {
  const attributes: Attributes = {};
  if (random.chance(0.6)) attributes["public"] = random.chance(0.5);
  if (random.chance(0.6)) attributes["level"] = random.int(5);
  if (random.chance(0.4) && users.length > 0) attributes["owner"] = random.pick(users);
  if (random.chance(0.5)) attributes["labels"] = random.some(TAGS, 0.5);
  return attributes;
}

export const ORDERINGS = ["greater-than", "greater-than-equals", "less-than", "less-than-equals"];
export const ARRAY_OPERATORS = ["array_subset", "array_superset", "array_intersect", "equals"];
export const MEMBER_OPERATORS = ["array_contains", "array-contains", "contains", "not-contains"];

export function contextLeaf(random: Random): Attributes {
  return random.chance(0.5)
    ? { "context.site": { [random.pick(["equals", "not-equals"])]: random.pick(SITES) } }
    : { "context.site": { [random.pick(["in", "not-in"])]: random.some(SITES, 0.5) } };
}

/** A comparison on user attributes (or the context), every operator of the language in turn. */
export function userLeaf(random: Random, users: string[]): Attributes {
  switch (random.int(9)) {
    case 0:
      return { "user.age": { [random.pick([...ORDERINGS, "equals", "not-equals"])]: random.int(60) } };
    case 1:
      return {
        "user.age": { [random.pick(["in", "not-in"])]: [random.int(60), random.int(60), random.int(60)] },
      };
    case 2: {
      const operator = random.pick([
        "equals",
        "not-equals",
        "starts-with",
        "ends-with",
        "contains",
        "not-contains",
      ]);
      return { "user.tier": { [operator]: random.pick([...TIERS, "pr", "e", "ree"]) } };
    }
    case 3:
      return random.chance(0.5)
        ? { "user.tier": { [random.pick(["in", "not-in"])]: random.some(TIERS, 0.5) } }
        : { "user.tier": { [random.pick(ORDERINGS)]: random.pick(["m", ...TIERS]) } };
    case 4:
      return { "user.tags": { [random.pick(MEMBER_OPERATORS)]: random.pick(TAGS) } };
    case 5:
      return { "user.tags": { [random.pick(ARRAY_OPERATORS)]: random.some(TAGS, 0.5) } };
    case 6:
      return {
        "user.key": { [random.pick(["equals", "not-equals", "starts-with"])]: random.pick([...users, "u"]) },
      };
    case 7:
      // Never present: every comparison is false, the negative ones included.
      return { "user.nickname": { [random.pick(["not-equals", "not-contains"])]: "x" } };
    default:
      return contextLeaf(random);
  }
}

/** A comparison on the resource (built-ins, attributes, references to the user). */
export function resourceLeaf(random: Random, users: string[], types: string[]): Attributes {
  switch (random.int(9)) {
    case 0:
      return { "resource.public": { equals: random.chance(0.5) } };
    case 1:
      return { "resource.level": { [random.pick([...ORDERINGS, "not-equals"])]: random.int(5) } };
    case 2:
      return random.chance(0.5)
        ? { "resource.labels": { [random.pick(MEMBER_OPERATORS)]: random.pick(TAGS) } }
        : { "resource.labels": { [random.pick(ARRAY_OPERATORS)]: random.some(TAGS, 0.5) } };
    case 3:
      return { "resource.owner": { [random.pick(["equals", "not-equals"])]: { ref: "user.key" } } };
    case 4:
      return { "resource.level": { [random.pick(ORDERINGS)]: { ref: "user.age" } } };
    case 5:
      return { "resource.tenant": { [random.pick(["equals", "not-equals"])]: random.pick(TENANTS) } };
    case 6:
      return random.chance(0.5)
        ? { "resource.key": { [random.pick(["in", "not-in"])]: ["i0", "i1", ...UNSYNCED_KEYS.slice(0, 1)] } }
        : {
            "resource.key": { [random.pick(["starts-with", "ends-with"])]: random.pick(["i", "not-", "1"]) },
          };
    case 7:
      return { "resource.type": { equals: random.pick(types) } };
    default:
      return random.chance(0.5) ? contextLeaf(random) : { "resource.owner": { in: users.slice(0, 3) } };
  }
}

/** allOf / anyOf / not over leaves, a few levels deep; now and then a node with two keys or an empty list. */
export function randomCondition(random: Random, leaf: () => Attributes, depth = 0): unknown {
  const roll = random.int(12);
  if (depth >= 2 || roll < 4) return leaf();
  if (roll < 7)
    return {
      allOf: Array.from({ length: random.int(3) + (depth === 0 ? 1 : 0) }, () =>
        randomCondition(random, leaf, depth + 1),
      ),
    };
  if (roll < 10)
    return { anyOf: Array.from({ length: random.int(3) }, () => randomCondition(random, leaf, depth + 1)) };
  if (roll < 11) return { not: randomCondition(random, leaf, depth + 1) };
  return { ...leaf(), ...leaf() };
}

export function userSet(random: Random, key: string, users: string[]): ConditionSetData {
  return { key, type: "userset", conditions: randomCondition(random, () => userLeaf(random, users)) };
}

export function resourceSet(random: Random, key: string, users: string[], types: string[]): ConditionSetData {
  return {
    key,
    type: "resourceset",
    resource: random.chance(0.7) ? random.pick(types) : null,
    conditions: randomCondition(random, () => resourceLeaf(random, users, types)),
  };
}

export function setRuleKey(rule: ConditionSetRuleData): string {
  return `${rule.user_set}|${rule.permission}|${rule.resource_set}`;
}

/** A set rule as the API accepts it: a userset, a resourceset, and a permission of the resourceset's resource. */
export function randomSetRule(random: Random, data: EnvironmentData): ConditionSetRuleData | undefined {
  const sets = data.condition_sets ?? [];
  const userSets = sets.filter((s) => s.type === "userset");
  const resourceSets = sets.filter((s) => s.type === "resourceset");
  if (userSets.length === 0 || resourceSets.length === 0) return undefined;
  const resourceSetPicked = random.pick(resourceSets);
  const resource = resourceSetPicked.resource
    ? data.resources?.find((r) => r.key === resourceSetPicked.resource)
    : random.pick(data.resources ?? []);
  if (resource === undefined) return undefined;
  const permission = random.pick([...resource.actions, ...Object.keys(resource.action_groups ?? {})]);
  return {
    user_set: random.pick(userSets).key,
    permission: `${resource.key}:${permission}`,
    resource_set: resourceSetPicked.key,
  };
}

// ---- random environments ----

export function randomEnvironment(random: Random): EnvironmentData {
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
          ...(random.chance(0.35) ? { when: { no_direct_roles_on_object: true } } : {}),
        };
      });
      role.granted_to = {
        users_with_role: rules,
        ...(random.chance(0.25) ? { when: { no_direct_roles_on_object: true } } : {}),
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
  const users = Array.from({ length: 6 + random.int(5) }, (_, i) => ({
    key: `u${i}`,
    ...(random.chance(0.8) ? { attributes: randomUserAttributes(random) } : {}),
  }));
  const userKeys = users.map((u) => u.key);
  const resource_instances = resources.flatMap((r) =>
    Array.from({ length: 3 + random.int(4) }, (_, i) => ({
      resource: r.key,
      key: `i${i}`,
      tenant: random.pick(TENANTS),
      ...(random.chance(0.8) ? { attributes: randomResourceAttributes(random, userKeys) } : {}),
    })),
  );
  const condition_sets = [
    ...Array.from({ length: 1 + random.int(3) }, (_, i) => userSet(random, `us${i}`, userKeys)),
    ...Array.from({ length: 1 + random.int(3) }, (_, i) => resourceSet(random, `rs${i}`, userKeys, types)),
  ];
  const data: EnvironmentData = {
    resources,
    roles,
    users,
    tenants: TENANTS.map((key) => ({ key })),
    resource_instances,
    relationship_tuples: [],
    role_assignments: [],
    condition_sets,
    condition_set_rules: [],
  };
  for (let i = 0, n = 3 + random.int(6); i < n; i++) {
    const rule = randomSetRule(random, data);
    if (rule !== undefined) data.condition_set_rules?.push(rule);
  }
  data.condition_set_rules = dedupe(data.condition_set_rules ?? [], setRuleKey);
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
  // no_direct_roles_on_object only matters to a user holding a role on a tuple's subject and a direct role on its
  // object: make that case common.
  for (const assignment of [...(data.role_assignments ?? [])]) {
    const subject = assignment.resource_instance;
    const tuple = (data.relationship_tuples ?? []).find((t) => t.subject === subject);
    if (tuple === undefined || !random.chance(0.7)) continue;
    const roleKeys = Object.keys(resources.find((r) => r.key === typeOf(tuple.object))?.roles ?? {});
    const tenant = data.resource_instances?.find((i) => `${i.resource}:${i.key}` === tuple.object)?.tenant;
    if (roleKeys.length === 0 || tenant === undefined) continue;
    data.role_assignments?.push({
      user: assignment.user,
      role: random.pick(roleKeys),
      tenant,
      resource_instance: tuple.object,
    });
  }
  data.role_assignments = dedupe(data.role_assignments ?? [], assignmentKey);
  return data;
}

export function dedupe<T>(items: T[], key: (item: T) => string): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(key(item), item);
  return [...byKey.values()];
}

export function assignmentKey(a: RoleAssignmentData): string {
  return a.resource_instance
    ? `${a.user}|${a.role}|${a.resource_instance}`
    : `${a.user}|${a.role}|${a.tenant}|`;
}

export function instanceNames(data: EnvironmentData): { name: string; type: string; tenant: string }[] {
  return (data.resource_instances ?? []).map((i) => ({
    name: `${i.resource}:${i.key}`,
    type: i.resource,
    tenant: i.tenant,
  }));
}

/** The API only accepts facts naming existing tenants, so generated facts use tenants that still exist. */
export function liveTenants(data: EnvironmentData): string[] {
  return (data.tenants ?? []).map((t) => t.key);
}

export function randomTuple(random: Random, data: EnvironmentData) {
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

export function randomAssignment(random: Random, data: EnvironmentData): RoleAssignmentData | undefined {
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

/**
 * A check aimed near some assignment (its tenant, its instance or a few tuples downstream) or anywhere, sometimes
 * on an instance the engine does not hold, with request attributes for the user or the resource and a context.
 */
export function randomCheck(random: Random, data: EnvironmentData): CheckQuery {
  const q = aimedCheck(random, data);
  const users = (data.users ?? []).map((u) => u.key);
  if (random.chance(0.15)) q.user = { key: q.user.key, attributes: randomUserAttributes(random) };
  if (random.chance(0.2)) q.resource = { ...q.resource, attributes: randomResourceAttributes(random, users) };
  q.context = random.chance(0.5) ? { site: random.pick(SITES) } : {};
  return q;
}

export function aimedCheck(random: Random, data: EnvironmentData): CheckQuery {
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
        // Apps check on their own object ids, synced or not: a tenant role decides either way.
        resource: random.chance(0.3)
          ? { type: resource.key, key: random.pick(UNSYNCED_KEYS), tenant: assignment.tenant }
          : { type: resource.key, tenant: assignment.tenant },
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
  const unsynced = instances.length === 0 || random.chance(0.12);
  const key = unsynced ? random.pick(UNSYNCED_KEYS) : random.pick(instances).name.split(":")[1];
  const tenant = random.chance(unsynced ? 0.6 : 0.2) ? random.pick(TENANTS) : undefined;
  return { user: { key: user }, action, resource: { type, key, ...(tenant ? { tenant } : {}) } };
}

export function typeOf(instance: string): string {
  return instance.split(":")[0] as string;
}
