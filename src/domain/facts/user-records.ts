import type { Db } from "../../db/db.ts";
import { duplicate } from "../../lib/errors.ts";
import { isUuid, newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { envelope, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { UserRow } from "./facts.repo.ts";
import { Resolver, scopedIds, userChange, type Env } from "./facts-write.ts";
import { assignRoles } from "./role-assignment-records.ts";
import {
  assignmentsOfUsers,
  insertUserIfNew,
  listUsers,
  updateUser,
  type UserAssignment,
  type UserFilter,
} from "./users.repo.ts";
import type { UserCreate, UserRead } from "./facts.schemas.ts";

/**
 * User records inside the caller's transaction and their API shape, shared by the modules that create, replace
 * or show users: users, tenants (users of a tenant) and bulk.
 */

type UserInTenant = UserRead["associated_tenants"][number];

/** A user with the tenants it has roles in, and its tenant roles (the deprecated `roles`). */
export function userRead(
  row: UserRow,
  assignments: UserAssignment[],
  includeInstanceRoles: boolean,
): UserRead {
  const tenants = new Map<string, UserInTenant>();
  const roles: UserRead["roles"] = [];
  for (const a of assignments) {
    let entry = tenants.get(a.tenant);
    if (!entry) {
      entry = { tenant: a.tenant, roles: [], status: "active" };
      if (includeInstanceRoles) entry.resource_instance_roles = [];
      tenants.set(a.tenant, entry);
    }
    if (a.instance_key === null || a.resource_key === null) {
      if (!entry.roles.includes(a.role)) entry.roles.push(a.role);
      roles.push({ role: a.role, tenant: a.tenant });
    } else if (includeInstanceRoles) {
      entry.resource_instance_roles?.push({
        resource_instance: a.instance_key,
        resource: a.resource_key,
        role: a.role,
      });
    }
  }
  return {
    id: row.id,
    key: row.key,
    organization_id: row.organization_id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    ...(row.email !== null && { email: row.email }),
    ...(row.first_name !== null && { first_name: row.first_name }),
    ...(row.last_name !== null && { last_name: row.last_name }),
    attributes: fromJsonObject(row.attributes),
    associated_tenants: [...tenants.values()],
    roles,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Reads of several users with their roles, in two indexed queries. */
export async function userReads(
  db: Db,
  envId: string,
  rows: UserRow[],
  includeInstanceRoles = false,
): Promise<UserRead[]> {
  const assignments = await assignmentsOfUsers(
    db,
    envId,
    rows.map((r) => r.id),
  );
  const byUser = new Map<string, UserAssignment[]>();
  for (const a of assignments) byUser.set(a.user_id, [...(byUser.get(a.user_id) ?? []), a]);
  return rows.map((r) => userRead(r, byUser.get(r.id) ?? [], includeInstanceRoles));
}

export async function listUserPage(
  db: Db,
  envId: string,
  filter: UserFilter,
  p: PageRequest,
): Promise<Page<UserRead>> {
  const { rows, total } = await listUsers(db, envId, filter, p);
  return envelope(await userReads(db, envId, rows, filter.includeInstanceRoles ?? false), total, p);
}

export function newUserRow(env: Env, input: Omit<UserCreate, "role_assignments">): UserRow {
  const at = now();
  return {
    id: newId(),
    ...scopedIds(env),
    key: input.key,
    email: input.email ?? null,
    first_name: input.first_name ?? null,
    last_name: input.last_name ?? null,
    attributes: toJson(input.attributes),
    created_at: at,
    updated_at: at,
  };
}

/** Inserts a new user (409 when the key exists) with its role assignments, inside the caller's transaction. */
export async function createUserRecord(
  resolver: Resolver,
  input: UserCreate,
  changes: Change[],
  loc: (string | number)[] = ["body"],
): Promise<UserRow> {
  const row = await insertUserRecord(resolver, input, changes, loc);
  if (!row) throw duplicate("user", input.key);
  return row;
}

/**
 * Inserts a new user with its role assignments, inside the caller's transaction; undefined (nothing written) when
 * the key is taken, also by a transaction that committed after this one looked (`Resolver.reloadUser` finds it).
 */
export async function insertUserRecord(
  resolver: Resolver,
  input: UserCreate,
  changes: Change[],
  loc: (string | number)[] = ["body"],
): Promise<UserRow | undefined> {
  // A key shaped like an id must not be another user's id either: a ref to it would name two users.
  if (isUuid(input.key) && (await resolver.user(input.key))) return undefined;
  const row = newUserRow(resolver.env, input);
  if (!(await insertUserIfNew(resolver.db, row))) return undefined;
  return wrote(resolver, row, input, changes, loc);
}

/** A user row just written: remembered, fed to the PDP, and given the role assignments of the body. */
async function wrote(
  resolver: Resolver,
  row: UserRow,
  input: Pick<UserCreate, "role_assignments">,
  changes: Change[],
  loc: (string | number)[],
): Promise<UserRow> {
  resolver.remember("user", row.key, row);
  changes.push(userChange(row));
  await assignRoles(resolver, row, input.role_assignments ?? [], changes, "skip", [
    ...loc,
    "role_assignments",
  ]);
  return row;
}

/** PATCH semantics: the profile fields the input names are set, the others stay. */
export async function patchUserRecord(
  resolver: Resolver,
  existing: UserRow,
  input: Pick<UserCreate, "email" | "first_name" | "last_name" | "attributes">,
  changes: Change[],
): Promise<UserRow> {
  const row = await updateUser(resolver.db, resolver.env.id, existing.id, {
    ...(input.email !== undefined && { email: input.email }),
    ...(input.first_name !== undefined && { first_name: input.first_name }),
    ...(input.last_name !== undefined && { last_name: input.last_name }),
    ...(input.attributes !== undefined && { attributes: toJson(input.attributes) }),
    updated_at: now(),
  });
  resolver.remember("user", row.key, row);
  changes.push(userChange(row));
  return row;
}

/** PUT semantics: every profile field is replaced (left out = cleared); role assignments are added. */
export async function replaceUserRecord(
  resolver: Resolver,
  existing: UserRow,
  input: Omit<UserCreate, "key">,
  changes: Change[],
  loc: (string | number)[] = ["body"],
): Promise<UserRow> {
  const row = await updateUser(resolver.db, resolver.env.id, existing.id, {
    email: input.email ?? null,
    first_name: input.first_name ?? null,
    last_name: input.last_name ?? null,
    attributes: toJson(input.attributes),
    updated_at: now(),
  });
  return wrote(resolver, row, input, changes, loc);
}

export const userDeleteChange = (key: string): Change => ({ kind: "user", op: "delete", data: { key } });
