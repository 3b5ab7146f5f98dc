// Random changes for engine tests, applied to the engine and (with the contract's cascades, as the API applies
// them) to the reference data, so that a test can keep its EnvironmentData in step with the engine.

import type { Change, ConditionSetData, EnvironmentData } from "../../src/pdp/engine/index.ts";
import {
  Random,
  TENANTS,
  assignmentKey,
  instanceNames,
  liveTenants,
  randomAssignment,
  randomResourceAttributes,
  randomSetRule,
  randomTuple,
  randomUserAttributes,
  resourceSet,
  setRuleKey,
  typeOf,
  userSet,
} from "./random-environment.ts";

// ---- random changes, applied to the engine and (with the contract's cascades) to the reference data ----

export function randomChanges(random: Random, data: EnvironmentData): Change[] {
  const assignments = data.role_assignments ?? [];
  const tuples = data.relationship_tuples ?? [];
  const roles = data.roles ?? [];
  const users = data.users ?? [];
  const resources = data.resources ?? [];
  const sets = data.condition_sets ?? [];
  const rules = data.condition_set_rules ?? [];
  const instances = instanceNames(data);
  const userKeys = users.map((u) => u.key);
  const types = resources.map((r) => r.key);
  if (users.length === 0 || instances.length === 0) return [];
  switch (random.int(22)) {
    case 0:
    case 1: {
      const assignment = randomAssignment(random, data);
      return assignment === undefined ? [] : [{ kind: "role_assignment", op: "upsert", data: assignment }];
    }
    case 2:
      return assignments.length === 0
        ? []
        : [{ kind: "role_assignment", op: "delete", data: random.pick(assignments) }];
    case 3:
    case 4: {
      const tuple = randomTuple(random, data);
      return tuple === undefined ? [] : [{ kind: "relationship_tuple", op: "upsert", data: tuple }];
    }
    case 5:
      return tuples.length === 0
        ? []
        : [{ kind: "relationship_tuple", op: "delete", data: random.pick(tuples) }];
    case 6: {
      const [resource, key] = random.pick(instances).name.split(":") as [string, string];
      return [{ kind: "resource_instance", op: "delete", data: { resource, key } }];
    }
    case 7: {
      // New attributes for an instance, or a new instance.
      const tenants = liveTenants(data);
      const existing = random.chance(0.6) ? random.pick(data.resource_instances ?? []) : undefined;
      if (existing === undefined && tenants.length === 0) return [];
      const instance = existing ?? {
        resource: random.pick(types),
        key: `i${10 + random.int(90)}`,
        tenant: random.pick(tenants),
      };
      const attributes = randomResourceAttributes(random, userKeys);
      return [{ kind: "resource_instance", op: "upsert", data: { ...instance, attributes } }];
    }
    case 8:
      return [{ kind: "user", op: "delete", data: { key: random.pick(users).key } }];
    case 9: {
      const key = random.chance(0.7) ? random.pick(users).key : `u${20 + random.int(10)}`;
      return [{ kind: "user", op: "upsert", data: { key, attributes: randomUserAttributes(random) } }];
    }
    case 10: {
      const missing = TENANTS.filter((t) => !liveTenants(data).includes(t));
      if (missing.length > 0 && random.chance(0.5))
        return [{ kind: "tenant", op: "upsert", data: { key: random.pick(missing) } }];
      // The API deletes a tenant's instances with it and sends their deletes first.
      const tenant = random.pick(TENANTS);
      const inTenant = (data.resource_instances ?? []).filter((i) => i.tenant === tenant);
      return [
        ...inTenant.map((i): Change => ({
          kind: "resource_instance",
          op: "delete",
          data: { resource: i.resource, key: i.key },
        })),
        { kind: "tenant", op: "delete", data: { key: tenant } },
      ];
    }
    case 11: {
      if (roles.length === 0) return [];
      const permissions = resources.flatMap((r) => r.actions.map((a) => `${r.key}:${a}`));
      return [
        {
          kind: "role",
          op: "upsert",
          data: { ...random.pick(roles), permissions: random.some(permissions, 0.3) },
        },
      ];
    }
    case 12:
      return roles.length === 0
        ? []
        : [{ kind: "role", op: "delete", data: { key: random.pick(roles).key } }];
    case 13:
    case 14: {
      // A resource changed as a whole: role permissions, a dropped role, an added or removed action.
      const resource = structuredClone(random.pick(resources));
      const roleKeys = Object.keys(resource.roles ?? {});
      if (roleKeys.length > 1 && random.chance(0.3)) delete resource.roles?.[random.pick(roleKeys)];
      const actionRoll = random.int(10);
      if (actionRoll < 2) resource.actions = [...resource.actions, `a${resource.actions.length}`];
      else if (actionRoll < 4 && resource.actions.length > 2)
        resource.actions = resource.actions.slice(0, -1);
      const names = [...resource.actions, ...Object.keys(resource.action_groups ?? {})];
      for (const role of Object.values(resource.roles ?? {})) {
        if (random.chance(0.5)) role.permissions = random.some(names, 0.5);
      }
      return [{ kind: "resource", op: "upsert", data: resource }];
    }
    case 15:
      return resources.length > 2 && random.chance(0.5)
        ? [{ kind: "resource", op: "delete", data: { key: random.pick(resources).key } }]
        : [];
    case 16:
    case 17: {
      const existing = sets.length > 0 && random.chance(0.6) ? random.pick(sets) : undefined;
      if (existing !== undefined) {
        const fresh =
          existing.type === "userset"
            ? userSet(random, existing.key, userKeys)
            : resourceSet(random, existing.key, userKeys, types);
        return [{ kind: "condition_set", op: "upsert", data: { ...existing, conditions: fresh.conditions } }];
      }
      const key = `s${random.int(100)}`;
      if (sets.some((s) => s.key === key)) return [];
      const set = random.chance(0.5)
        ? userSet(random, key, userKeys)
        : resourceSet(random, key, userKeys, types);
      return [{ kind: "condition_set", op: "upsert", data: set }];
    }
    case 18:
      return sets.length === 0
        ? []
        : [{ kind: "condition_set", op: "delete", data: { key: random.pick(sets).key } }];
    case 19:
    case 20: {
      const rule = randomSetRule(random, data);
      return rule === undefined ? [] : [{ kind: "condition_set_rule", op: "upsert", data: rule }];
    }
    default:
      return rules.length === 0
        ? []
        : [{ kind: "condition_set_rule", op: "delete", data: random.pick(rules) }];
  }
}

function upsertByKey<T>(items: T[] | undefined, item: T, key: (item: T) => string): T[] {
  const others = (items ?? []).filter((i) => key(i) !== key(item));
  return [...others, item];
}

/** Deletes instances with the tuples touching them and the assignments on them. */
function withoutInstances(data: EnvironmentData, gone: (name: string) => boolean): void {
  data.resource_instances = data.resource_instances?.filter((i) => !gone(`${i.resource}:${i.key}`));
  data.relationship_tuples = data.relationship_tuples?.filter((t) => !gone(t.subject) && !gone(t.object));
  data.role_assignments = data.role_assignments?.filter(
    (a) => !a.resource_instance || !gone(a.resource_instance),
  );
}

function withoutConditionSets(data: EnvironmentData, gone: (set: ConditionSetData) => boolean): void {
  const removed = new Set((data.condition_sets ?? []).filter(gone).map((s) => s.key));
  data.condition_sets = data.condition_sets?.filter((s) => !removed.has(s.key));
  data.condition_set_rules = data.condition_set_rules?.filter(
    (r) => !removed.has(r.user_set) && !removed.has(r.resource_set),
  );
}

export function applyToReference(data: EnvironmentData, change: Change): EnvironmentData {
  const next = structuredClone(data);
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
      const name = `${change.data.resource}:${change.data.key}`;
      if (change.op === "upsert") {
        next.resource_instances = upsertByKey(
          next.resource_instances,
          change.data,
          (i) => `${i.resource}:${i.key}`,
        );
      } else {
        withoutInstances(next, (n) => n === name);
      }
      return next;
    }
    case "user":
      if (change.op === "upsert") {
        next.users = upsertByKey(next.users, change.data, (u) => u.key);
      } else {
        next.users = next.users?.filter((u) => u.key !== change.data.key);
        next.role_assignments = next.role_assignments?.filter((a) => a.user !== change.data.key);
      }
      return next;
    case "tenant":
      if (change.op === "upsert") {
        next.tenants = upsertByKey(next.tenants, change.data, (t) => t.key);
      } else {
        next.tenants = next.tenants?.filter((t) => t.key !== change.data.key);
        next.role_assignments = next.role_assignments?.filter((a) => a.tenant !== change.data.key);
      }
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
    case "resource": {
      const key = change.data.key;
      if (change.op === "upsert") {
        // Roles dropped from the resource lose their instance assignments.
        const before = Object.keys(next.resources?.find((r) => r.key === key)?.roles ?? {});
        const dropped = before.filter((role) => change.data.roles?.[role] === undefined);
        next.role_assignments = next.role_assignments?.filter(
          (a) => !a.resource_instance || typeOf(a.resource_instance) !== key || !dropped.includes(a.role),
        );
        next.resources = next.resources?.map((r) => (r.key === key ? change.data : r));
        return next;
      }
      // A deleted resource takes its instances, the relations and derivations naming it, the tenant-role
      // permissions on it, the resourcesets bound to it and the set rules on its permissions.
      withoutInstances(next, (name) => typeOf(name) === key);
      next.resources = next.resources
        ?.filter((r) => r.key !== key)
        .map((r) => ({
          ...r,
          relations: Object.fromEntries(
            Object.entries(r.relations ?? {}).filter(([, subject]) => subject !== key),
          ),
          roles: Object.fromEntries(
            Object.entries(r.roles ?? {}).map(([roleKey, role]) => [
              roleKey,
              role.granted_to?.users_with_role === undefined
                ? role
                : {
                    ...role,
                    granted_to: {
                      ...role.granted_to,
                      users_with_role: role.granted_to.users_with_role.filter(
                        (rule) => rule.on_resource !== key,
                      ),
                    },
                  },
            ]),
          ),
        }));
      next.roles = next.roles?.map((r) => ({
        ...r,
        permissions: r.permissions?.filter((p) => typeOf(p) !== key),
      }));
      withoutConditionSets(next, (set) => set.type === "resourceset" && set.resource === key);
      next.condition_set_rules = next.condition_set_rules?.filter((r) => typeOf(r.permission) !== key);
      return next;
    }
    case "condition_set":
      if (change.op === "upsert") {
        next.condition_sets = upsertByKey(next.condition_sets, change.data, (s) => s.key);
      } else {
        withoutConditionSets(next, (set) => set.key === change.data.key);
      }
      return next;
    case "condition_set_rule": {
      const others = (next.condition_set_rules ?? []).filter(
        (r) => setRuleKey(r) !== setRuleKey(change.data),
      );
      next.condition_set_rules = change.op === "upsert" ? [...others, change.data] : others;
      return next;
    }
    case "proxy_config":
      if (change.op === "upsert")
        next.proxy_configs = upsertByKey(next.proxy_configs, change.data, (c) => c.key);
      else next.proxy_configs = next.proxy_configs?.filter((c) => c.key !== change.data.key);
      return next;
  }
}
