// Listings: /user-permissions, /authorized_users and /user-tenants. They walk many facts per call, so they use
// the forward closure and per-user searches rather than the check path's single backward search.

import { rolesHeldByUser, NO_STATE, type DerivationSearch } from "./derivation.ts";
import type { FactStore } from "./facts.ts";
import { hasPermission, type CompiledSchema } from "./schema.ts";
import type {
  AuthorizedUserAssignment,
  AuthorizedUsers,
  PermissionsEntry,
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

function permissionNames(schema: CompiledSchema, roles: Iterable<number>): string[] {
  const names: string[] = [];
  for (const role of roles) {
    for (const permission of schema.rolePermissions[role] ?? [])
      names.push(schema.permissionNames[permission] as string);
  }
  return sortedUnique(names);
}

/**
 * Permit's /user-permissions: "__tenant:<t>" entries for tenant roles and "<type>:<key>" entries for instances on
 * which the user holds (direct or derived) roles. `tenants` filters both kinds, `resources` the instance entries,
 * `resource_types` selects entry kinds ("__tenant" for tenant entries, a type for its instances).
 */
export function userPermissions({ facts, schema }: EngineView, query: UserPermissionsQuery): UserPermissions {
  const result = new Map<string, PermissionsEntry>();
  const user = facts.users.get(query.user.key);
  if (user === undefined || !facts.userExists(user)) return {};
  const tenantFilter = query.tenants === undefined ? undefined : new Set(query.tenants);
  const resourceFilter = query.resources === undefined ? undefined : new Set(query.resources);
  const typeFilter = query.resource_types === undefined ? undefined : new Set(query.resource_types);
  const tenantAllowed = (tenant: number) =>
    facts.tenantExists(tenant) &&
    (tenantFilter === undefined || tenantFilter.has(facts.tenants.keyOf(tenant)));

  if (typeFilter === undefined || typeFilter.has(TENANT_RESOURCE)) {
    const rolesByTenant = new Map<number, number[]>();
    const assigned = facts.userTenantRoles[user] ?? [];
    for (let i = 0; i < assigned.length; i += 2) {
      const tenant = assigned[i] as number;
      if (!tenantAllowed(tenant)) continue;
      rolesByTenant.set(tenant, [...(rolesByTenant.get(tenant) ?? []), assigned[i + 1] as number]);
    }
    for (const [tenant, roles] of rolesByTenant) {
      result.set(`${TENANT_RESOURCE}:${facts.tenants.keyOf(tenant)}`, {
        permissions: permissionNames(schema, roles),
        roles: sortedUnique(roles.map((role) => facts.roleKey(role))),
        tenant: tenantDetails(facts, tenant),
      });
    }
  }

  const instanceTenants = new Set<number>();
  const direct = facts.userInstanceRoles[user] ?? [];
  for (let i = 0; i < direct.length; i += 3) instanceTenants.add(direct[i + 2] as number);
  for (const tenant of instanceTenants) {
    if (!tenantAllowed(tenant)) continue;
    for (const [instance, held] of rolesHeldByUser(facts, schema, user, tenant)) {
      // A check on an instance runs in the instance's tenant, so roles derived in another tenant do not count.
      if (facts.instanceTenant[instance] !== tenant) continue;
      const name = facts.instanceName(instance);
      const type = facts.types.keyOf(facts.instanceType[instance] as number);
      if (resourceFilter !== undefined && !resourceFilter.has(name)) continue;
      if (typeFilter !== undefined && !typeFilter.has(type)) continue;
      result.set(name, {
        permissions: permissionNames(schema, held.granted),
        roles: sortedUnique([...held.granted].map((role) => facts.roleKey(role))),
        tenant: tenantDetails(facts, tenant),
        resource: {
          key: facts.instanceKeys[instance] as string,
          type,
          attributes: { ...facts.instanceAttributes[instance] },
        },
      });
    }
  }
  return byKey(result);
}

/**
 * Permit's /authorized_users: every user granted the action on the resource through a tenant role in the
 * resource's tenant or, for an instance, through a direct or derived instance role, with the granting role.
 */
export function authorizedUsers(
  { facts, schema, search }: EngineView,
  resourceName: string,
  target: { permission: number; instance: number; tenant: number | undefined; tenantKey: string },
): AuthorizedUsers {
  const { permission, instance, tenant, tenantKey } = target;
  const users = new Map<string, AuthorizedUserAssignment[]>();
  const add = (user: number, resource: string, role: number) => {
    const key = facts.users.keyOf(user);
    const assignment = { user: key, tenant: tenantKey, resource, role: facts.roleKey(role) };
    users.set(key, [...(users.get(key) ?? []), assignment]);
  };
  if (tenant === undefined) return { resource: resourceName, tenant: tenantKey, users: {} };

  for (const user of facts.tenantMembers[tenant] ?? []) {
    if (!facts.userExists(user)) continue;
    const assigned = facts.userTenantRoles[user] ?? [];
    for (let i = 0; i < assigned.length; i += 2) {
      const role = assigned[i + 1] as number;
      if (assigned[i] === tenant && hasPermission(schema.rolePermissionBits[role], permission)) {
        add(user, `${TENANT_RESOURCE}:${tenantKey}`, role);
      }
    }
  }

  const start = instance < 0 ? NO_STATE : search.startState(permission);
  if (start !== NO_STATE) {
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
        if (search.holds(user, instance, tenant, search.exactState(role))) add(user, name, role);
      }
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
