import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import type { Db } from "../db/db.ts";
import { AppError } from "../lib/errors.ts";
import { fromJson, fromJsonObject } from "../lib/json.ts";
import type {
  EnvironmentData,
  ResourceData,
  TenantRoleData,
  GrantedToData,
  DerivationRuleData,
} from "../pdp/engine/types.ts";
import { proxyConfigData, storedRules } from "./proxy-config-records.ts";
import type { DataSnapshot } from "../pdp/storage.ts";

/** The policy part of an environment (resources, roles, condition sets and their rules), by keys. */
export type PolicyData = Required<
  Pick<EnvironmentData, "resources" | "roles" | "condition_sets" | "condition_set_rules" | "proxy_configs">
>;

/** The policy tables of one environment, one query each (in parallel, unless `db` is a transaction). */
async function readPolicyRows(db: Db, env: string) {
  return allNamed({
    resources: db
      .selectFrom("resources")
      .select(["id", "key"])
      .where("environment_id", "=", env)
      .where("built_in", "=", 0)
      .execute(),
    actions: db
      .selectFrom("resource_actions")
      .select(["id", "resource_id", "key"])
      .where("environment_id", "=", env)
      .execute(),
    attributes: db
      .selectFrom("resource_attributes")
      .select(["resource_id", "key", "type", "description"])
      .where("environment_id", "=", env)
      .execute(),
    groups: db
      .selectFrom("action_groups")
      .select(["id", "resource_id", "key"])
      .where("environment_id", "=", env)
      .execute(),
    groupActions: db
      .selectFrom("action_group_actions")
      .select(["action_group_id", "action_id"])
      .where("environment_id", "=", env)
      .execute(),
    roles: db
      .selectFrom("roles")
      .select(["id", "resource_id", "key", "no_direct_roles_on_object"])
      .where("environment_id", "=", env)
      .execute(),
    permissions: db
      .selectFrom("role_permissions")
      .select(["role_id", "action_id"])
      .where("environment_id", "=", env)
      .execute(),
    extendsRows: db
      .selectFrom("role_extends")
      .select(["role_id", "extends_role_id"])
      .where("environment_id", "=", env)
      .execute(),
    relations: db
      .selectFrom("relations")
      .select(["id", "object_resource_id", "subject_resource_id", "key"])
      .where("environment_id", "=", env)
      .execute(),
    derivations: db
      .selectFrom("role_derivations")
      .select(["role_id", "source_role_id", "relation_id", "no_direct_roles_on_object"])
      .where("environment_id", "=", env)
      .execute(),
    conditionSets: db
      .selectFrom("condition_sets")
      .select(["id", "key", "type", "resource_id", "conditions"])
      .where("environment_id", "=", env)
      .execute(),
    rules: db
      .selectFrom("condition_set_rules")
      .select(["user_set_id", "action_id", "resource_set_id"])
      .where("environment_id", "=", env)
      .execute(),
    proxyConfigs: db
      .selectFrom("proxy_configs")
      .select(["key", "mapping_rules"])
      .where("environment_id", "=", env)
      .orderBy("key")
      .execute(),
  });
}

/** Awaits every promise of an object at once (as Promise.all does), keeping their names. */
async function allNamed<T extends Record<string, Promise<unknown>>>(
  promises: T,
): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  const values = await Promise.all(Object.values(promises));
  const names = Object.keys(promises);
  return Object.fromEntries(names.map((name, i) => [name, values[i]])) as { [K in keyof T]: Awaited<T[K]> };
}

type PolicyRows = Awaited<ReturnType<typeof readPolicyRows>>;
type Row<K extends keyof PolicyRows> = PolicyRows[K][number];

/** The rows' lookups by id that the steps below share. */
function policyLookups(rows: PolicyRows) {
  return {
    resourceKey: new Map(rows.resources.map((r) => [r.id, r.key])),
    actionById: new Map(rows.actions.map((a) => [a.id, a])),
    roleById: new Map(rows.roles.map((r) => [r.id, r])),
    relationById: new Map(rows.relations.map((r) => [r.id, r])),
  };
}
type PolicyLookups = ReturnType<typeof policyLookups>;

/** Each resource with its actions, attributes, action groups and relations (roles come next), by resource id. */
function resourcesOf(
  rows: PolicyRows,
  { resourceKey, actionById }: PolicyLookups,
): Map<string, ResourceData> {
  const groupById = new Map(rows.groups.map((g) => [g.id, g]));
  const byResource = new Map<string, ResourceData>();
  for (const r of rows.resources) {
    byResource.set(r.id, {
      key: r.key,
      actions: [],
      attributes: {},
      action_groups: {},
      roles: {},
      relations: {},
    });
  }
  for (const a of rows.actions) byResource.get(a.resource_id)?.actions.push(a.key);
  for (const a of rows.attributes) {
    const res = byResource.get(a.resource_id);
    if (res?.attributes)
      res.attributes[a.key] = { type: a.type, ...(a.description !== null && { description: a.description }) };
  }
  for (const g of rows.groups) {
    const res = byResource.get(g.resource_id);
    if (res?.action_groups) res.action_groups[g.key] = [];
  }
  for (const ga of rows.groupActions) {
    const group = groupById.get(ga.action_group_id);
    const action = actionById.get(ga.action_id);
    if (group && action) byResource.get(group.resource_id)?.action_groups?.[group.key]?.push(action.key);
  }
  for (const rel of rows.relations) {
    const res = byResource.get(rel.object_resource_id);
    const subject = resourceKey.get(rel.subject_resource_id);
    if (res?.relations && subject) res.relations[rel.key] = subject;
  }
  return byResource;
}

/**
 * The roles with their permissions, extends and derivations: tenant roles are returned (by role id), resource roles
 * go into their resource in `byResource`.
 */
function rolesOf(
  rows: PolicyRows,
  { resourceKey, actionById, roleById, relationById }: PolicyLookups,
  byResource: Map<string, ResourceData>,
): Map<string, TenantRoleData> {
  const tenantRoles = new Map<string, TenantRoleData>();
  for (const role of rows.roles) {
    if (role.resource_id === null) {
      tenantRoles.set(role.id, { key: role.key, permissions: [], extends: [] });
      continue;
    }
    const res = byResource.get(role.resource_id);
    if (!res?.roles) continue;
    const granted: GrantedToData = { users_with_role: [] };
    if (role.no_direct_roles_on_object) granted.when = { no_direct_roles_on_object: true };
    res.roles[role.key] = { permissions: [], extends: [], granted_to: granted };
  }
  const resourceRoleOf = (roleId: string) => {
    const role = roleById.get(roleId);
    if (!role || role.resource_id === null) return undefined;
    return byResource.get(role.resource_id)?.roles?.[role.key];
  };
  for (const p of rows.permissions) {
    const action = actionById.get(p.action_id);
    if (!action) continue;
    const tenantRole = tenantRoles.get(p.role_id);
    if (tenantRole) {
      tenantRole.permissions?.push(`${resourceKey.get(action.resource_id)}:${action.key}`);
    } else {
      resourceRoleOf(p.role_id)?.permissions?.push(action.key);
    }
  }
  for (const e of rows.extendsRows) {
    const parent = roleById.get(e.extends_role_id);
    if (!parent) continue;
    const tenantRole = tenantRoles.get(e.role_id);
    if (tenantRole) tenantRole.extends?.push(parent.key);
    else resourceRoleOf(e.role_id)?.extends?.push(parent.key);
  }
  for (const d of rows.derivations) {
    const target = resourceRoleOf(d.role_id);
    const source = roleById.get(d.source_role_id);
    const relation = relationById.get(d.relation_id);
    if (!target || !source || !relation) continue;
    target.granted_to?.users_with_role?.push(derivationRule(d, source, relation.key, resourceKey));
  }
  return tenantRoles;
}

/** One derivation of a resource role, by keys. */
function derivationRule(
  d: Row<"derivations">,
  source: Row<"roles">,
  relationKey: string,
  resourceKey: Map<string, string>,
): DerivationRuleData {
  return {
    role: source.key,
    on_resource: source.resource_id === null ? "__tenant" : (resourceKey.get(source.resource_id) ?? ""),
    linked_by_relation: relationKey,
    ...(d.no_direct_roles_on_object ? { when: { no_direct_roles_on_object: true } } : {}),
  };
}

/** The condition sets and their rules, by keys. */
function conditionSetsOf(
  rows: PolicyRows,
  { resourceKey, actionById }: PolicyLookups,
): Pick<PolicyData, "condition_sets" | "condition_set_rules"> {
  const setKey = new Map(rows.conditionSets.map((s) => [s.id, s.key]));
  return {
    condition_sets: rows.conditionSets.map((s) => ({
      key: s.key,
      type: s.type === "resourceset" ? "resourceset" : "userset",
      resource: s.resource_id === null ? null : (resourceKey.get(s.resource_id) ?? null),
      conditions: fromJson(s.conditions) ?? {},
    })),
    condition_set_rules: rows.rules.map((r) => {
      const action = actionById.get(r.action_id);
      return {
        user_set: setKey.get(r.user_set_id) ?? "",
        permission: action ? `${resourceKey.get(action.resource_id)}:${action.key}` : "",
        resource_set: setKey.get(r.resource_set_id) ?? "",
      };
    }),
  };
}

/** Reads one environment's policy, and the id-to-key maps its facts need, in one query per table. */
async function readPolicyParts(db: Db, environmentId: string) {
  const rows = await readPolicyRows(db, environmentId);
  const lookups = policyLookups(rows);
  const byResource = resourcesOf(rows, lookups);
  const tenantRoles = rolesOf(rows, lookups, byResource);
  const policy: PolicyData = {
    resources: [...byResource.values()],
    roles: [...tenantRoles.values()],
    ...conditionSetsOf(rows, lookups),
    proxy_configs: rows.proxyConfigs.map((c) => proxyConfigData(c.key, storedRules(c.mapping_rules))),
  };
  const { resourceKey, roleById, relationById } = lookups;
  return { policy, resourceKey, roleById, relationById };
}

/** Reads one environment's policy, by keys. */
export async function readPolicy(db: Db, environmentId: string): Promise<PolicyData> {
  return (await readPolicyParts(db, environmentId)).policy;
}

/** Reads one environment's whole policy and facts, by keys, in set-based queries (one per table). */
export async function readEnvironmentData(db: Db, environmentId: string): Promise<EnvironmentData> {
  const env = environmentId;
  const [{ policy, resourceKey, roleById, relationById }, users, tenants, instances, assignments, tuples] =
    await Promise.all([
      readPolicyParts(db, env),
      db
        .selectFrom("users")
        .select(["key", "email", "first_name", "last_name", "attributes"])
        .where("environment_id", "=", env)
        .execute(),
      db
        .selectFrom("tenants")
        .select(["id", "key", "attributes"])
        .where("environment_id", "=", env)
        .execute(),
      db
        .selectFrom("resource_instances")
        .select(["id", "resource_id", "tenant_id", "key", "attributes"])
        .where("environment_id", "=", env)
        .execute(),
      db
        .selectFrom("role_assignments as a")
        .innerJoin("users as u", "u.id", "a.user_id")
        .select(["u.key as user", "a.role_id", "a.tenant_id", "a.resource_instance_id", "a.expires_at"])
        .where("a.environment_id", "=", env)
        .execute(),
      db
        .selectFrom("relationship_tuples")
        .select(["subject_id", "relation_id", "object_id", "tenant_id"])
        .where("environment_id", "=", env)
        .execute(),
    ]);
  const tenantKey = new Map(tenants.map((t) => [t.id, t.key]));
  const instanceName = new Map<string, string>();
  const instanceData = instances.map((i) => {
    const resource = resourceKey.get(i.resource_id) ?? "";
    instanceName.set(i.id, `${resource}:${i.key}`);
    return {
      resource,
      key: i.key,
      tenant: tenantKey.get(i.tenant_id) ?? "",
      attributes: fromJsonObject(i.attributes),
    };
  });
  return {
    ...policy,
    users: users.map((u) => ({
      key: u.key,
      email: u.email,
      first_name: u.first_name,
      last_name: u.last_name,
      attributes: fromJsonObject(u.attributes),
    })),
    tenants: tenants.map((t) => ({ key: t.key, attributes: fromJsonObject(t.attributes) })),
    resource_instances: instanceData,
    role_assignments: assignments.map((a) => ({
      user: a.user,
      role: roleById.get(a.role_id)?.key ?? "",
      tenant: tenantKey.get(a.tenant_id) ?? "",
      resource_instance:
        a.resource_instance_id === null ? null : (instanceName.get(a.resource_instance_id) ?? null),
      ...(a.expires_at !== null && { expires_at: a.expires_at }),
    })),
    relationship_tuples: tuples.map((t) => ({
      subject: instanceName.get(t.subject_id) ?? "",
      relation: relationById.get(t.relation_id)?.key ?? "",
      object: instanceName.get(t.object_id) ?? "",
      tenant: tenantKey.get(t.tenant_id) ?? "",
    })),
  };
}

/** The environment's revision; a deleted environment is a 404. */
export async function environmentRevision(db: Kysely<Database>, environmentId: string): Promise<number> {
  const env = await db
    .selectFrom("environments")
    .select("revision")
    .where("id", "=", environmentId)
    .executeTakeFirst();
  if (!env) throw new AppError("NOT_FOUND", "the environment does not exist (it was deleted)");
  return Number(env.revision);
}

/**
 * The environment's data and the revision it is at, read whole in one transaction so the two agree
 * (PostgreSQL: repeatable read; SQLite: a transaction is a snapshot). The PDPs read pages instead
 * (`snapshotPages`); this whole read, with its own joins, is what the tests hold those pages against.
 */
export async function readSnapshot(
  db: Kysely<Database>,
  dialect: "sqlite" | "postgres",
  environmentId: string,
): Promise<DataSnapshot> {
  const tx =
    dialect === "postgres" ? db.transaction().setIsolationLevel("repeatable read") : db.transaction();
  return tx.execute(async (trx) => {
    const revision = await environmentRevision(trx, environmentId);
    // Sequential inside the transaction: one connection.
    const data = await readEnvironmentData(trx, environmentId);
    return { revision, data };
  });
}
