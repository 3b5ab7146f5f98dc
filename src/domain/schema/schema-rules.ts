import type { Db } from "../../db/db.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import { duplicate, invalid, notFound } from "../../lib/errors.ts";
import { isUuid, newId } from "../../lib/ids.ts";
import { toJson } from "../../lib/json.ts";
import { KEY_PATTERN } from "../../lib/schemas.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import { insertRole } from "./roles.repo.ts";
import {
  findResource,
  findRole,
  listActions,
  listExtendsEdges,
  type ResourceRow,
  type RoleRow,
} from "./schema.repo.ts";

/** Rules shared by the schema services. */

const KEY_RE = new RegExp(KEY_PATTERN);

export function assertKey(key: string, what: string, loc: (string | number)[]): void {
  if (!KEY_RE.test(key) || key.length > 255) {
    throw invalid(
      `${what} key '${key}' is invalid: keys are 1-255 characters of A-Z, a-z, 0-9, '-' and '_'`,
      loc,
    );
  }
}

/** Checks the keys of a map body (actions, attributes, roles, relations), naming the first bad one. */
export function assertKeys(map: Record<string, unknown> | undefined, what: string, loc: string[]): void {
  for (const key of Object.keys(map ?? {})) assertKey(key, what, [...loc, key]);
}

/** Keys starting with "__" belong to built-in objects. */
export function assertNotReserved(key: string, what: string, loc: (string | number)[]): void {
  if (key.startsWith("__"))
    throw invalid(`${what} keys starting with '__' are reserved for built-in objects`, loc);
}

/** The columns every environment-level row carries. */
export const scopeColumns = (scope: EnvScope) => ({
  organization_id: scope.organizationId,
  project_id: scope.project.id,
  environment_id: scope.environment.id,
});

/** The last fields of a read of a row that belongs to a resource: where it lives and when it changed. */
export const resourceScopedRead = (row: {
  organization_id: string;
  project_id: string;
  environment_id: string;
  resource_id: string;
  created_at: string;
  updated_at: string;
}) => ({
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  resource_id: row.resource_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export async function requireResource(db: Db, envId: string, ref: string): Promise<ResourceRow> {
  const row = await findResource(db, envId, ref);
  if (!row) throw notFound("resource", ref);
  return row;
}

/** A resource the caller may change: built-in resources are managed by Gatehouse (user attributes excepted). */
export async function writableResource(db: Db, envId: string, ref: string): Promise<ResourceRow> {
  const row = await requireResource(db, envId, ref);
  if (row.built_in === 1)
    throw invalid(`resource '${row.key}' is built in and cannot be changed here`, ["path"]);
  return row;
}

/** Runs an insert and answers 409 DUPLICATE_ENTITY when a unique key already holds it. */
export async function insertUnique<T>(what: string, key: string, insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate(what, key);
    throw e;
  }
}

/** Ids (or keys) named twice in one list count once. */
export const unique = <T>(items: readonly T[]): T[] => [...new Set(items)];

/**
 * Turns action references of one resource into action ids: bare keys ("read"), "resource:action" naming this
 * resource, or action ids. Any unknown one is a 404 naming it; nothing is written before all resolve.
 */
export async function resolveResourceActions(
  db: Db,
  envId: string,
  resource: ResourceRow,
  refs: readonly string[],
  loc: (string | number)[],
): Promise<string[]> {
  if (refs.length === 0) return [];
  const actions = await listActions(db, envId, resource.id);
  const byKey = new Map(actions.map((a) => [a.key, a.id]));
  const ids = new Set(actions.map((a) => a.id));
  return unique(
    refs.map((ref, i) => {
      if (isUuid(ref) && ids.has(ref.toLowerCase())) return ref.toLowerCase();
      const colon = ref.indexOf(":");
      let key = ref;
      if (colon >= 0) {
        if (ref.slice(0, colon) !== resource.key) {
          throw invalid(
            `permission '${ref}' names another resource; a role of '${resource.key}' can only be granted its actions`,
            [...loc, i],
          );
        }
        key = ref.slice(colon + 1);
      }
      const id = byKey.get(key);
      if (id === undefined) throw notFound("action", `${resource.key}:${key}`);
      return id;
    }),
  );
}

// ---- Roles: shared by tenant roles and resource roles ----

type Edge = { role_id: string; extends_role_id: string };

function adjacency(edges: Edge[], reverse: boolean): Map<string, string[]> {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    const [from, to] = reverse ? [e.extends_role_id, e.role_id] : [e.role_id, e.extends_role_id];
    const list = next.get(from);
    if (list) list.push(to);
    else next.set(from, [to]);
  }
  return next;
}

/**
 * Roles reachable from `start` through `extends`: ancestors are the roles it inherits from (its parents, their
 * parents, ...), descendants the roles inheriting from it. Nearest first; `start` itself is left out.
 */
export function walkRoles(edges: Edge[], start: string, direction: "ancestors" | "descendants"): string[] {
  const next = adjacency(edges, direction === "descendants");
  const seen = new Set<string>([start]);
  const order: string[] = [];
  for (let queue = [start]; queue.length > 0;) {
    const following: string[] = [];
    for (const id of queue) {
      for (const to of next.get(id) ?? []) {
        if (!seen.has(to)) {
          seen.add(to);
          order.push(to);
          following.push(to);
        }
      }
    }
    queue = following;
  }
  return order;
}

function findCycle(edges: Edge[]): string[] | undefined {
  const next = adjacency(edges, false);
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    state.set(id, "open");
    path.push(id);
    for (const to of next.get(id) ?? []) {
      if (state.get(to) === "open") return [...path.slice(path.indexOf(to)), to];
      if (!state.has(to)) {
        const cycle = visit(to);
        if (cycle) return cycle;
      }
    }
    path.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const id of next.keys()) {
    if (!state.has(id)) {
      const cycle = visit(id);
      if (cycle) return cycle;
    }
  }
  return undefined;
}

/** After writing `extends`: a role may not inherit from itself, directly or through others. */
export async function assertNoExtendsCycle(db: Db, envId: string, resourceId: string | null): Promise<void> {
  const cycle = findCycle(await listExtendsEdges(db, envId, resourceId));
  if (!cycle) return;
  const rows = await db.selectFrom("roles").select(["id", "key"]).where("id", "in", cycle).execute();
  const keyOf = new Map(rows.map((r) => [r.id, r.key]));
  throw invalid(
    `roles cannot extend each other in a cycle: ${cycle.map((id) => keyOf.get(id)).join(" -> ")}`,
    ["body", "extends"],
  );
}

/** Role references (ids or keys) among the tenant roles (resourceId null) or one resource's roles; 404 if missing. */
export async function resolveRoleRefs(
  db: Db,
  envId: string,
  resource: { id: string; key: string } | null,
  refs: readonly string[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const ref of unique(refs)) {
    const row = await findRole(db, envId, resource?.id ?? null, ref);
    if (!row) throw notFound("role", resource ? `${resource.key}:${ref}` : ref);
    ids.push(row.id);
  }
  return unique(ids);
}

export async function createRoleRecord(
  trx: Db,
  scope: EnvScope,
  resource: { id: string; key: string } | null,
  key: string,
  fields: {
    name: string;
    description?: string | undefined;
    attributes?: Record<string, unknown> | undefined;
  },
  at = now(),
): Promise<RoleRow> {
  const row: RoleRow = {
    id: newId(),
    ...scopeColumns(scope),
    resource_id: resource?.id ?? null,
    key,
    name: fields.name,
    description: fields.description ?? null,
    attributes: toJson(fields.attributes),
    no_direct_roles_on_object: 0,
    created_at: at,
    updated_at: at,
  };
  await insertUnique("role", resource ? `${resource.key}:${key}` : key, () => insertRole(trx, row));
  return row;
}
