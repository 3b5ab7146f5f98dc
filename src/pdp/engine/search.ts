// Searches (AuthZEN's subject, resource and action search): which users, instances or actions a check allows.
// Candidates come from the listings' indexes (tenant roles, instance roles and derivations); only a permission
// that attribute rules can grant widens them to every user or every instance of the type, since any of them may
// match. Every candidate is then decided by the check itself, so a search never lists what a check would deny.

import { userPermissions, type EngineView } from "./listings.ts";
import { hasPermission } from "./schema.ts";
import type { Attributes, AuthorizedUsers, CheckQuery, Decision, QueryResource, QueryUser } from "./types.ts";

/** Users that may perform `action` on `resource`. */
export interface SubjectSearchQuery {
  action: string;
  resource: QueryResource;
  context: Attributes;
}

/** Instances of `type` on which the user may perform `action`. */
export interface ResourceSearchQuery {
  user: QueryUser;
  action: string;
  type: string;
  context: Attributes;
}

/** Actions the user may perform on `resource`. */
export interface ActionSearchQuery {
  user: QueryUser;
  resource: QueryResource;
  context: Attributes;
}

export interface SearchDeps {
  check(query: CheckQuery): Decision;
  authorizedUsers(query: SubjectSearchQuery): AuthorizedUsers;
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function permissionOf({ facts, schema }: EngineView, type: string, action: string): number | undefined {
  const typeId = facts.types.get(type);
  return typeId === undefined ? undefined : schema.actionPermissions[typeId]?.get(action);
}

/** User keys, sorted. */
export function searchSubjects(view: EngineView, deps: SearchDeps, query: SubjectSearchQuery): string[] {
  const { facts, schema } = view;
  const permission = permissionOf(view, query.resource.type, query.action);
  if (permission === undefined) return [];
  const candidates =
    schema.abacRules[permission] !== undefined
      ? facts.users.keys.filter((_, user) => facts.userExists(user))
      : Object.keys(deps.authorizedUsers(query).users);
  return candidates
    .filter(
      (key) =>
        deps.check({ user: { key }, action: query.action, resource: query.resource, context: query.context })
          .allow,
    )
    .sort(compareStrings);
}

/** Instance keys of the type, sorted; each is checked in its own tenant. */
export function searchResources(view: EngineView, deps: SearchDeps, query: ResourceSearchQuery): string[] {
  const { facts, schema } = view;
  const typeId = facts.types.get(query.type);
  const permission = permissionOf(view, query.type, query.action);
  const ofType = typeId === undefined ? undefined : facts.instancesByType[typeId];
  if (permission === undefined || ofType === undefined) return [];
  const candidates = new Set<number>();
  const user = facts.users.get(query.user.key);
  if (schema.abacRules[permission] !== undefined) {
    for (const instance of ofType.values()) candidates.add(instance);
  } else if (user !== undefined && facts.userExists(user)) {
    // A tenant role that grants the permission covers every instance of the type in its tenant.
    const grantingTenants = new Set<number>();
    const assigned = facts.userTenantRoles[user] ?? [];
    for (let i = 0; i < assigned.length; i += 2) {
      if (hasPermission(schema.rolePermissionBits[assigned[i + 1] as number], permission)) {
        grantingTenants.add(assigned[i] as number);
      }
    }
    if (grantingTenants.size > 0) {
      for (const instance of ofType.values()) {
        if (grantingTenants.has(facts.instanceTenant[instance] as number)) candidates.add(instance);
      }
    }
    // Instance roles, direct or derived.
    const held = userPermissions(view, { user: query.user, resource_types: [query.type] });
    for (const entry of Object.values(held)) {
      const instance = entry.resource === undefined ? undefined : ofType.get(entry.resource.key);
      if (instance !== undefined) candidates.add(instance);
    }
  }
  const allowed: string[] = [];
  for (const instance of candidates) {
    if (!facts.instanceExists(instance)) continue;
    const key = facts.instanceKeys[instance] as string;
    const tenant = facts.tenants.keyOf(facts.instanceTenant[instance] as number);
    const resource = { type: query.type, key, tenant };
    if (deps.check({ user: query.user, action: query.action, resource, context: query.context }).allow) {
      allowed.push(key);
    }
  }
  return allowed.sort(compareStrings);
}

/** Action keys of the resource's type, sorted. */
export function searchActions(
  { facts, schema }: EngineView,
  deps: SearchDeps,
  query: ActionSearchQuery,
): string[] {
  const typeId = facts.types.get(query.resource.type);
  const actions = typeId === undefined ? undefined : schema.actionPermissions[typeId];
  if (actions === undefined) return [];
  return [...actions.keys()]
    .filter(
      (action) =>
        deps.check({ user: query.user, action, resource: query.resource, context: query.context }).allow,
    )
    .sort(compareStrings);
}
