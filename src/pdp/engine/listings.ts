// Listings: /user-permissions, /authorized_users and /user-tenants. They walk many facts per call, so they use
// the forward closure and per-user searches rather than the check path's single backward search.

import { ConditionInput } from "./conditions.ts";
import { rolesHeldByUser, NO_STATE, type DerivationSearch } from "./derivation.ts";
import type { FactStore } from "./facts.ts";
import { hasPermission, type AbacRule, type CompiledSchema } from "./schema.ts";
import type {
  Attributes,
  AuthorizedUserAssignment,
  AuthorizedUsers,
  PermissionsEntry,
  QueryResource,
  TenantDetails,
  UserPermissions,
  UserPermissionsQuery,
} from "./types.ts";

export interface EngineView {
  facts: FactStore;
  schema: CompiledSchema;
  search: DerivationSearch;
}

const TENANT_RESOURCE = "__tenant";

function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Listings are sorted so that the same data always gives the same document, whatever order it arrived in. */
function byKey<T>(entries: Iterable<[string, T]>): Record<string, T> {
  return Object.fromEntries([...entries].sort(([a], [b]) => compareStrings(a, b)));
}

/** Listings hand out copies of attributes so callers cannot edit the engine's facts through them. */
export function tenantDetails(facts: FactStore, tenant: number): TenantDetails {
  return { key: facts.tenants.keyOf(tenant), attributes: { ...facts.tenantAttributes(tenant) } };
}

/** The first condition-set rule that matches the input, if any. */
function matchingRule(rules: readonly AbacRule[] | undefined, input: ConditionInput): AbacRule | undefined {
  if (rules === undefined) return undefined;
  for (const rule of rules) if (rule.matchesUser(input) && rule.matchesResource(input)) return rule;
  return undefined;
}

function* instanceIds(count: number): Generator<number> {
  for (let id = 0; id < count; id++) yield id;
}

function hasAbacRules(schema: CompiledSchema): boolean {
  return schema.abacRules.some((rules) => rules !== undefined && rules.length > 0);
}

/**
 * Permit's /user-permissions: "__tenant:<t>" entries for what a check on a resource type allows in tenant t, and
 * "<type>:<key>" entries for what a check on the instance allows, through tenant roles, direct or derived instance
 * roles and condition-set rules alike, so that every entry agrees with /allowed. `tenants` filters both kinds,
 * `resources` the instance entries, `resource_types` selects entry kinds ("__tenant" for tenant entries).
 */
export function userPermissions({ facts, schema }: EngineView, query: UserPermissionsQuery): UserPermissions {
  const user = facts.users.get(query.user.key);
  const abac = hasAbacRules(schema);
  if (user === undefined && !abac) return {};
  const walk = permissionsWalk(facts, schema, query, user, abac);
  const result = new Map<string, PermissionsEntry>();
  if (walk.typeFilter === undefined || walk.typeFilter.has(TENANT_RESOURCE)) addTenantEntries(walk, result);
  addInstanceEntries(walk, heldInstanceRoles(facts, schema, user), result);
  return byKey(result);
}

/** What the steps of one /user-permissions listing share: the user, the filters and the condition input. */
interface PermissionsWalk {
  facts: FactStore;
  schema: CompiledSchema;
  /** Whether the schema has condition-set rules (they may grant on any tenant and instance). */
  abac: boolean;
  typeFilter: Set<string> | undefined;
  resourceFilter: Set<string> | undefined;
  tenantAllowed: (tenant: number) => boolean;
  /** tenant -> the user's tenant roles there */
  rolesByTenant: Map<number, number[]>;
  /** The user's side is set once; each entry sets the resource's side before `addAbac`. */
  input: ConditionInput;
  /** Adds the permissions of `type` that a condition-set rule grants to the input's resource. */
  addAbac: (type: number, permissions: Set<number>) => void;
  names: (permissions: Iterable<number>) => string[];
}

function permissionsWalk(
  facts: FactStore,
  schema: CompiledSchema,
  query: UserPermissionsQuery,
  user: number | undefined,
  abac: boolean,
): PermissionsWalk {
  const tenantFilter = query.tenants === undefined ? undefined : new Set(query.tenants);
  const input = new ConditionInput();
  input.userKey = query.user.key;
  input.userRequest = query.user;
  input.userStored = user === undefined ? undefined : facts.userProfiles[user];
  input.context = query.context;
  const rolesByTenant = new Map<number, number[]>();
  const assigned = (user === undefined ? undefined : facts.userTenantRoles[user]) ?? [];
  for (let i = 0; i < assigned.length; i += 2) {
    const tenant = assigned[i] as number;
    rolesByTenant.set(tenant, [...(rolesByTenant.get(tenant) ?? []), assigned[i + 1] as number]);
  }
  return {
    facts,
    schema,
    abac,
    typeFilter: query.resource_types === undefined ? undefined : new Set(query.resource_types),
    resourceFilter: query.resources === undefined ? undefined : new Set(query.resources),
    tenantAllowed: (tenant) =>
      facts.tenantExists(tenant) &&
      (tenantFilter === undefined || tenantFilter.has(facts.tenants.keyOf(tenant))),
    rolesByTenant,
    input,
    addAbac: (type, permissions) => {
      for (const permission of schema.actionPermissions[type]?.values() ?? []) {
        if (!permissions.has(permission) && matchingRule(schema.abacRules[permission], input) !== undefined) {
          permissions.add(permission);
        }
      }
    },
    names: (permissions) => sortedUnique([...permissions].map((p) => schema.permissionNames[p] as string)),
  };
}

/** The "__tenant:<t>" entries: the user's tenant roles in t, and what condition-set rules grant on each type there. */
function addTenantEntries(walk: PermissionsWalk, result: Map<string, PermissionsEntry>): void {
  const { facts, schema, abac, rolesByTenant, input } = walk;
  // Condition-set rules are not tied to a tenant, so with any rule every tenant may have an entry.
  const tenants = abac ? facts.tenants.keys.map((_, id) => id) : [...rolesByTenant.keys()];
  for (const tenant of tenants) {
    if (!walk.tenantAllowed(tenant)) continue;
    const roles = rolesByTenant.get(tenant) ?? [];
    const permissions = new Set<number>();
    for (const role of roles) for (const p of schema.rolePermissions[role] ?? []) permissions.add(p);
    if (abac) {
      input.resourceKey = undefined;
      input.resourceTenant = facts.tenants.keyOf(tenant);
      input.resourceRequest = undefined;
      input.resourceStored = undefined;
      schema.actionPermissions.forEach((actions, type) => {
        if (actions === undefined) return;
        input.resourceType = facts.types.keyOf(type);
        walk.addAbac(type, permissions);
      });
    }
    if (roles.length === 0 && permissions.size === 0) continue;
    result.set(`${TENANT_RESOURCE}:${facts.tenants.keyOf(tenant)}`, {
      permissions: walk.names(permissions),
      roles: sortedUnique(roles.map((role) => facts.roleKey(role))),
      tenant: tenantDetails(facts, tenant),
    });
  }
}

/** instance -> the instance roles the user is granted there, directly or derived, in the instance's tenant. */
function heldInstanceRoles(
  facts: FactStore,
  schema: CompiledSchema,
  user: number | undefined,
): Map<number, Set<number>> {
  const held = new Map<number, Set<number>>();
  if (user === undefined) return held;
  const instanceTenants = new Set<number>();
  const direct = facts.userInstanceRoles[user] ?? [];
  for (let i = 0; i < direct.length; i += 3) instanceTenants.add(direct[i + 2] as number);
  for (const tenant of instanceTenants) {
    for (const [instance, roles] of rolesHeldByUser(facts, schema, user, tenant)) {
      // A check on an instance runs in the instance's tenant, so roles derived in another tenant do not count.
      if (facts.instanceTenant[instance] === tenant) held.set(instance, roles.granted);
    }
  }
  return held;
}

/** The "<type>:<key>" entries: instance roles held, tenant roles on the instance's type, condition-set rules. */
function addInstanceEntries(
  walk: PermissionsWalk,
  held: Map<number, Set<number>>,
  result: Map<string, PermissionsEntry>,
): void {
  const { facts, abac, rolesByTenant } = walk;
  // Tenant roles and condition-set rules reach instances the user holds no role on: then every instance is a
  // candidate (a scan of one typed array).
  const scanAll = abac || rolesByTenant.size > 0;
  const candidates: Iterable<number> = scanAll ? instanceIds(facts.instanceCount) : held.keys();
  for (const instance of candidates) {
    if (!facts.instanceExists(instance)) continue;
    const tenant = facts.instanceTenant[instance] as number;
    if (!walk.tenantAllowed(tenant)) continue;
    const typeId = facts.instanceType[instance] as number;
    const type = facts.types.keyOf(typeId);
    if (walk.typeFilter !== undefined && !walk.typeFilter.has(type)) continue;
    const name = facts.instanceName(instance);
    if (walk.resourceFilter !== undefined && !walk.resourceFilter.has(name)) continue;
    const entry = instanceEntry(walk, held, { instance, tenant, typeId, type });
    if (entry !== undefined) result.set(name, entry);
  }
}

/** One instance's entry, or undefined when the user has neither a role nor a permission on it. */
function instanceEntry(
  walk: PermissionsWalk,
  held: Map<number, Set<number>>,
  { instance, tenant, typeId, type }: { instance: number; tenant: number; typeId: number; type: string },
): PermissionsEntry | undefined {
  const { facts, schema, input } = walk;
  const roles = new Set<string>();
  const permissions = new Set<number>();
  for (const role of held.get(instance) ?? []) {
    roles.add(facts.roleKey(role));
    for (const p of schema.rolePermissions[role] ?? []) permissions.add(p);
  }
  for (const role of walk.rolesByTenant.get(tenant) ?? []) {
    let grants = false;
    for (const p of schema.rolePermissions[role] ?? []) {
      if (schema.permissionType[p] !== typeId) continue;
      permissions.add(p);
      grants = true;
    }
    if (grants) roles.add(facts.roleKey(role));
  }
  if (walk.abac) {
    input.setResource(
      { type, key: facts.instanceKeys[instance] },
      facts.tenants.keyOf(tenant),
      facts.instanceAttributes[instance],
    );
    walk.addAbac(typeId, permissions);
  }
  if (roles.size === 0 && permissions.size === 0) return undefined;
  return {
    permissions: walk.names(permissions),
    roles: sortedUnique(roles),
    tenant: tenantDetails(facts, tenant),
    resource: {
      key: facts.instanceKeys[instance] as string,
      type,
      attributes: { ...facts.instanceAttributes[instance] },
    },
  };
}

/** What an authorized-users listing is about: the resolved check target and the request's resource and context. */
export interface ListingTarget {
  permission: number;
  instance: number;
  tenant: number | undefined;
  tenantKey: string;
  resource: QueryResource;
  context: Attributes | undefined;
}

/**
 * Permit's /authorized_users: every user a check of the action on the resource allows, with what grants it: a
 * tenant role in the resource's tenant, a direct or derived instance role, or a condition-set rule (named by its
 * user set, the resource as the listing's resource).
 */
export function authorizedUsers(
  { facts, schema, search }: EngineView,
  resourceName: string,
  target: ListingTarget,
): AuthorizedUsers {
  const { permission, instance, tenant, tenantKey } = target;
  const users = new Map<string, AuthorizedUserAssignment[]>();
  const add = (user: number, resource: string, role: string) => {
    const key = facts.users.keyOf(user);
    const assignment = { user: key, tenant: tenantKey, resource, role };
    users.set(key, [...(users.get(key) ?? []), assignment]);
  };

  for (const user of tenant === undefined ? [] : (facts.tenantMembers[tenant] ?? [])) {
    if (!facts.userExists(user)) continue;
    const assigned = facts.userTenantRoles[user] ?? [];
    for (let i = 0; i < assigned.length; i += 2) {
      const role = assigned[i + 1] as number;
      if (assigned[i] === tenant && hasPermission(schema.rolePermissionBits[role], permission)) {
        add(user, `${TENANT_RESOURCE}:${tenantKey}`, facts.roleKey(role));
      }
    }
  }

  const start = instance < 0 || tenant === undefined ? NO_STATE : search.startState(permission);
  if (start !== NO_STATE && tenant !== undefined) {
    const candidates = new Set<number>();
    for (const source of search.candidateSources(instance, tenant, start)) {
      const assignees = facts.instanceAssignees[source] ?? [];
      for (let i = 0; i < assignees.length; i += 3) {
        if (assignees[i + 2] === tenant) candidates.add(assignees[i] as number);
      }
    }
    const name = facts.instanceName(instance);
    for (const user of candidates) {
      if (!facts.userExists(user)) continue;
      for (const role of schema.rolesGranting[permission] ?? []) {
        if (search.holds(user, instance, tenant, search.exactState(role)))
          add(user, name, facts.roleKey(role));
      }
    }
  }

  const rules = schema.abacRules[permission];
  if (rules !== undefined && rules.length > 0) {
    const input = new ConditionInput();
    input.setResource(
      target.resource,
      tenantKey,
      instance >= 0 ? facts.instanceAttributes[instance] : undefined,
    );
    input.context = target.context;
    for (let user = 0; user < facts.users.size; user++) {
      if (!facts.userExists(user)) continue;
      input.userKey = facts.users.keyOf(user);
      input.userStored = facts.userProfiles[user];
      const rule = matchingRule(rules, input);
      if (rule !== undefined) add(user, resourceName, rule.userSet);
    }
  }
  for (const assignments of users.values()) {
    assignments.sort((a, b) => compareStrings(a.resource, b.resource) || compareStrings(a.role, b.role));
  }
  return { resource: resourceName, tenant: tenantKey, users: byKey(users) };
}

/** Permit's /user-tenants: tenants where the user holds any role, tenant or instance level, sorted by key. */
export function userTenants({ facts }: EngineView, userKey: string): TenantDetails[] {
  const user = facts.users.get(userKey);
  if (user === undefined || !facts.userExists(user)) return [];
  const tenants = new Set<number>();
  const tenantRoles = facts.userTenantRoles[user] ?? [];
  for (let i = 0; i < tenantRoles.length; i += 2) tenants.add(tenantRoles[i] as number);
  const instanceRoles = facts.userInstanceRoles[user] ?? [];
  for (let i = 0; i < instanceRoles.length; i += 3) tenants.add(instanceRoles[i + 2] as number);
  return [...tenants]
    .filter((tenant) => facts.tenantExists(tenant))
    .map((tenant) => tenantDetails(facts, tenant))
    .sort((a, b) => compareStrings(a.key, b.key));
}

/** Filters of the PDP's `/local/role_assignments` (Permit's local API); `resource` is a resource type. */
export interface RoleAssignmentFilter {
  user?: string;
  role?: string;
  tenant?: string;
  resource?: string;
  /** "type:key" */
  resource_instance?: string;
}

export interface LocalRoleAssignment {
  user: string;
  role: string;
  tenant: string;
  resource_instance?: string;
}

/**
 * One page (`skip`, then at most `take`) of the role assignments the engine holds that match every given filter:
 * users in the order the PDP holds them, each user's assignments sorted by tenant, instance and role. Nothing is
 * sorted or built beyond the page's users, so a page costs what it skips, not the size of the environment.
 */
export function roleAssignments(
  { facts }: EngineView,
  filter: RoleAssignmentFilter,
  skip: number,
  take: number,
): LocalRoleAssignment[] {
  const out: LocalRoleAssignment[] = [];
  const named = filter.user === undefined ? undefined : facts.users.get(filter.user);
  if (filter.user !== undefined && named === undefined) return out;
  const tenantOk = (tenant: string) => filter.tenant === undefined || filter.tenant === tenant;
  const roleOk = (role: string) => filter.role === undefined || filter.role === role;
  const users = named === undefined ? facts.users.keys.keys() : [named];
  let skipped = 0;
  for (const user of users) {
    if (out.length >= take) break;
    if (!facts.userExists(user)) continue;
    const userKey = facts.users.keyOf(user);
    const mine: LocalRoleAssignment[] = [];
    if (filter.resource === undefined && filter.resource_instance === undefined) {
      const tenantRoles = facts.userTenantRoles[user] ?? [];
      for (let i = 0; i < tenantRoles.length; i += 2) {
        const tenant = facts.tenants.keyOf(tenantRoles[i] as number);
        const role = facts.roleKey(tenantRoles[i + 1] as number);
        if (tenantOk(tenant) && roleOk(role)) mine.push({ user: userKey, role, tenant });
      }
    }
    const instanceRoles = facts.userInstanceRoles[user] ?? [];
    for (let i = 0; i < instanceRoles.length; i += 3) {
      const instance = instanceRoles[i] as number;
      const name = facts.instanceName(instance);
      if (filter.resource_instance !== undefined && filter.resource_instance !== name) continue;
      if (filter.resource !== undefined && !name.startsWith(`${filter.resource}:`)) continue;
      const tenant = facts.tenants.keyOf(instanceRoles[i + 2] as number);
      const role = facts.roleKey(instanceRoles[i + 1] as number);
      if (tenantOk(tenant) && roleOk(role))
        mine.push({ user: userKey, role, tenant, resource_instance: name });
    }
    if (skipped + mine.length <= skip) {
      skipped += mine.length;
      continue;
    }
    mine.sort(
      (a, b) =>
        compareStrings(a.tenant, b.tenant) ||
        compareStrings(a.resource_instance ?? "", b.resource_instance ?? "") ||
        compareStrings(a.role, b.role),
    );
    for (const assignment of mine.slice(skip - skipped)) {
      if (out.length < take) out.push(assignment);
    }
    skipped = skip;
  }
  return out;
}
