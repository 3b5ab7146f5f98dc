// Listing walks (docs/data-filtering.md): the instances of a type a user may act on, and the users who may act on
// a resource, a page at a time. A walk's position is one integer id (instances and users have dense ids that are
// never reused), so a cursor holds a position, never a result list, and a page costs what it examines. Each page
// gathers candidates (the user's derived instance roles, or the resource's possible assignees) when they are
// few, or else scans the ids of the type (or every user) from the position, and decides each one with the check
// itself, so a listing never holds what /allowed would deny, nor misses what it would allow. A page examines at
// most WORK_LIMIT ids: past that it ends short and its cursor continues where it stopped.

import { instanceIdsGranting } from "./filter-plan.ts";
import type { EngineView } from "./listings.ts";
import { hasPermission } from "./schema.ts";
import { NO_STATE } from "./derivation.ts";
import type { Journal } from "./journal.ts";
import type { Attributes, QueryResource, QueryUser } from "./types.ts";

/**
 * Gathering candidates costs their number on every page, scanning costs about size x ids / results: candidates are
 * gathered up to sqrt(size x ids) (at least MIN_CANDIDATES), so that neither makes a walk quadratic.
 */
export const MIN_CANDIDATES = 2_000;
const candidateLimit = (size: number, ids: number) => Math.max(MIN_CANDIDATES, Math.sqrt(size * ids));
/** Ids a page examines at most. */
export const WORK_LIMIT = 10_000;

/** Where a walk stands: after the id `after` (-1 at the start), gathering candidates or scanning. */
export interface WalkPosition {
  after: number;
  scan: boolean;
}

/** A cursor: a position and the revision every page of the walk answers at. */
export interface ListCursor extends WalkPosition {
  revision: number;
}

export interface ListRequest {
  size: number;
  /** Absent for a first page. */
  cursor?: ListCursor;
}

/** A page at `revision` (`next` absent: the walk is complete), or gone: the cursor's revision is not held. */
export type ListAnswer<T> = { gone: true } | { gone: false; items: T[]; revision: number; next?: ListCursor };

export interface WalkPage<T> {
  items: T[];
  /** Absent when the walk is complete. */
  next?: WalkPosition;
}

/** Instances of `type` on which the user may perform `action`; `tenant` keeps that tenant's ("default": all). */
export interface ResourceListQuery {
  user: QueryUser;
  action: string;
  type: string;
  tenant?: string;
  context?: Attributes;
}

/** Users who may perform `action` on `resource` (an instance, or the type in a tenant). */
export interface SubjectListQuery {
  action: string;
  resource: QueryResource;
  context?: Attributes;
}

/** The engine's check without its side effects: whether the decision on the target allows. */
export type Decide = (user: QueryUser, resource: QueryResource, target: DecideTarget) => boolean;

export interface DecideTarget {
  permission: number;
  instance: number;
  tenant: number | undefined;
  tenantKey: string;
}

/** Ascending ids: an array, or 0..length-1. */
interface Domain {
  length: number;
  at(index: number): number;
}

const arrayDomain = (ids: readonly number[]): Domain => ({
  length: ids.length,
  at: (i) => ids[i] as number,
});

/** The first index whose id is above `after`. */
function firstAfter(domain: Domain, after: number): number {
  let low = 0;
  let high = domain.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (domain.at(mid) <= after) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Up to `size` accepted ids after `position`, examining at most WORK_LIMIT. */
function walkPage(domain: Domain, position: WalkPosition, size: number, accept: (id: number) => boolean) {
  const items: number[] = [];
  if (size <= 0) return { items, next: position };
  let examined = 0;
  for (let i = firstAfter(domain, position.after); i < domain.length; i++) {
    if (items.length === size || examined === WORK_LIMIT) {
      return { items, next: { after: domain.at(i - 1), scan: position.scan } };
    }
    const id = domain.at(i);
    examined++;
    if (accept(id)) items.push(id);
  }
  return { items };
}

/** Candidates sorted, or undefined when there are too many to gather (then the walk scans). */
function sortedCandidates(ids: Set<number>, limit: number): number[] | undefined {
  return ids.size > limit ? undefined : [...ids].sort((a, b) => a - b);
}

/** A page of instances; `query.tenant` must already be undefined for "default" (the engine does that). */
export function resourcesPage(
  view: EngineView,
  decide: Decide,
  query: ResourceListQuery,
  size: number,
  position: WalkPosition,
): WalkPage<{ key: string; tenant: string }> {
  const { facts, schema } = view;
  const type = facts.types.get(query.type);
  const permission = type === undefined ? undefined : schema.actionPermissions[type]?.get(query.action);
  if (type === undefined || permission === undefined) return { items: [] };
  const onlyTenant = query.tenant === undefined ? undefined : (facts.tenants.get(query.tenant) ?? -2);
  const user = facts.users.get(query.user.key);
  let candidates: number[] | undefined;
  if (!position.scan) {
    const limit = candidateLimit(size, facts.typeInstanceIds[type]?.length ?? 0);
    candidates = resourceCandidates(view, { permission, type, user, onlyTenant, limit });
    if (candidates === undefined) position = { ...position, scan: true };
  }
  const domain = arrayDomain(candidates ?? facts.typeInstanceIds[type] ?? []);
  const page = walkPage(domain, position, size, (instance) => {
    if (!facts.instanceExists(instance)) return false;
    const tenant = facts.instanceTenant[instance] as number;
    if (onlyTenant !== undefined && tenant !== onlyTenant) return false;
    const tenantKey = facts.tenants.keyOf(tenant);
    const resource = { type: query.type, key: facts.instanceKeys[instance] as string, tenant: tenantKey };
    return decide(query.user, resource, { permission, instance, tenant, tenantKey });
  });
  return {
    items: page.items.map((instance) => ({
      key: facts.instanceKeys[instance] as string,
      tenant: facts.tenants.keyOf(facts.instanceTenant[instance] as number),
    })),
    ...(page.next && { next: page.next }),
  };
}

/**
 * The instances of the type the user holds a role on (directly or derived), when no tenant role and no attribute
 * rule can grant the permission (those reach instances without a role: then undefined, and the walk scans).
 */
function resourceCandidates(
  view: EngineView,
  target: {
    permission: number;
    type: number;
    user: number | undefined;
    onlyTenant: number | undefined;
    limit: number;
  },
): number[] | undefined {
  const { permission, type, user, onlyTenant, limit } = target;
  const { facts, schema } = view;
  if ((schema.abacRules[permission]?.length ?? 0) > 0) return undefined;
  if (user === undefined) return [];
  const assigned = facts.userTenantRoles[user] ?? [];
  for (let i = 0; i < assigned.length; i += 2) {
    const tenant = assigned[i] as number;
    if (onlyTenant !== undefined && tenant !== onlyTenant) continue;
    if (hasPermission(schema.rolePermissionBits[assigned[i + 1] as number], permission)) return undefined;
  }
  const ids = instanceIdsGranting(view, user, type, permission, onlyTenant);
  return ids.length > limit ? undefined : Array.from(ids);
}

export function subjectsPage(
  view: EngineView,
  decide: Decide,
  query: SubjectListQuery,
  target: DecideTarget,
  size: number,
  position: WalkPosition,
): WalkPage<string> {
  const { facts } = view;
  let candidates: number[] | undefined;
  if (!position.scan) {
    candidates = subjectCandidates(view, target, candidateLimit(size, facts.users.size));
    if (candidates === undefined) position = { ...position, scan: true };
  }
  const everyone: Domain = { length: facts.users.size, at: (i) => i };
  const domain = candidates === undefined ? everyone : arrayDomain(candidates);
  const page = walkPage(
    domain,
    position,
    size,
    (user) => facts.userExists(user) && decide({ key: facts.users.keyOf(user) }, query.resource, target),
  );
  return {
    items: page.items.map((user) => facts.users.keyOf(user)),
    ...(page.next && { next: page.next }),
  };
}

/** Users holding a tenant role in the resource's tenant or a role on an instance a derivation starts from. */
function subjectCandidates(
  { facts, schema, search }: EngineView,
  target: DecideTarget,
  limit: number,
): number[] | undefined {
  const { permission, instance, tenant } = target;
  if ((schema.abacRules[permission]?.length ?? 0) > 0) return undefined;
  if (tenant === undefined) return [];
  const ids = new Set<number>(facts.tenantMembers[tenant] ?? []);
  const start = instance < 0 ? NO_STATE : search.startState(permission);
  if (start !== NO_STATE) {
    for (const source of search.candidateSources(instance, tenant, start)) {
      const assignees = facts.instanceAssignees[source] ?? [];
      for (let i = 0; i < assignees.length; i += 3) {
        if (assignees[i + 2] === tenant) ids.add(assignees[i] as number);
      }
      if (ids.size > limit) return undefined;
    }
  }
  return sortedCandidates(ids, limit);
}

/** One page at the cursor's revision (the newest for a first page), or gone when the journal lacks it. */
export function walkAt<T>(
  journal: Journal,
  request: ListRequest,
  page: (position: WalkPosition) => WalkPage<T>,
  schemaChanged: () => void,
): ListAnswer<T> {
  const current = journal.revision;
  const revision = request.cursor?.revision ?? current ?? 0;
  const position = { after: request.cursor?.after ?? -1, scan: request.cursor?.scan ?? false };
  let answered: WalkPage<T>;
  if (current === undefined) {
    // An engine never marked (tests, tools) has one state: revision 0.
    if (revision !== 0) return { gone: true };
    answered = page(position);
  } else {
    const at = journal.at(revision, () => page(position), schemaChanged);
    if (at.gone) return { gone: true };
    answered = at.value;
  }
  const { items, next } = answered;
  return { gone: false, items, revision, ...(next && { next: { ...next, revision } }) };
}
