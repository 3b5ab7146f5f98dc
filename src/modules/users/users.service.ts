import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Db } from "../../changes/feed.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Principal } from "../../lib/access.ts";
import { duplicate, invalid } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { ScopeService } from "../../domain/path-scope.ts";
import type { UserRow } from "../../domain/facts/facts.repo.ts";
import { Resolver, scopedIds, userChange, writeFacts, type Env } from "../../domain/facts/facts-write.ts";
import { assignmentRead, assignRoles, unassignRole } from "../role-assignments/role-assignments.service.ts";
import type { RoleAssignmentRead } from "../role-assignments/role-assignments.schemas.ts";
import {
  assignmentsOfUsers,
  deleteUsers,
  insertUsers,
  listUsers,
  updateUser,
  type UserAssignment,
  type UserFilter,
} from "./users.repo.ts";
import {
  USER_KEY_PATTERN,
  type UserCreate,
  type UserListQuery,
  type UserRead,
  type UserReplace,
  type UserRoleCreate,
  type UserRoleRemove,
  type UserUpdate,
} from "./users.schemas.ts";

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
  const { rows, total } = await listUsers(db, envId, filter, offsetOf(p), p.perPage);
  return envelope(await userReads(db, envId, rows, filter.includeInstanceRoles ?? false), total, p);
}

const USER_KEY_RE = new RegExp(USER_KEY_PATTERN);

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
  if (await resolver.user(input.key)) throw duplicate("user", input.key);
  const row = newUserRow(resolver.env, input);
  try {
    await insertUsers(resolver.db, [row]);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate("user", input.key);
    throw e;
  }
  resolver.remember("user", row.key, row);
  changes.push(userChange(row));
  await assignRoles(resolver, row, input.role_assignments ?? [], changes, "skip", [
    ...loc,
    "role_assignments",
  ]);
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
  resolver.remember("user", row.key, row);
  changes.push(userChange(row));
  await assignRoles(resolver, row, input.role_assignments ?? [], changes, "skip", [
    ...loc,
    "role_assignments",
  ]);
  return row;
}

export const userDeleteChange = (key: string): Change => ({ kind: "user", op: "delete", data: { key } });

export function createUsersService(deps: { db: Kysely<Database>; scope: ScopeService }) {
  const { db, scope } = deps;

  const write = <T>(env: Env, fn: (resolver: Resolver, changes: Change[]) => Promise<T>): Promise<T> =>
    writeFacts(db, env, fn);

  const readOne = async (d: Db, env: Env, row: UserRow): Promise<UserRead> => {
    const [read] = await userReads(d, env.id, [row]);
    if (!read) throw new Error("user read missing");
    return read;
  };

  return {
    async list(principal: Principal, projRef: string, envRef: string, q: UserListQuery, p: PageRequest) {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "read" });
      return listUserPage(
        db,
        environment.id,
        {
          search: q.search,
          searchOperator: q.search_operator,
          role: q.role,
          includeInstanceRoles: q.include_resource_instance_roles,
        },
        p,
      );
    },

    async get(principal: Principal, projRef: string, envRef: string, userRef: string): Promise<UserRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "read" });
      const user = await new Resolver(db, environment).requireUser(userRef);
      return readOne(db, environment, user);
    },

    async create(
      principal: Principal,
      projRef: string,
      envRef: string,
      input: UserCreate,
    ): Promise<UserRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      return write(environment, async (resolver, changes) =>
        readOne(resolver.db, environment, await createUserRecord(resolver, input, changes)),
      );
    },

    /** Creates (201) or replaces (200) the user the path names. */
    async replace(
      principal: Principal,
      projRef: string,
      envRef: string,
      userRef: string,
      input: UserReplace,
    ): Promise<{ user: UserRead; created: boolean }> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      return write(environment, async (resolver, changes) => {
        const existing = await resolver.user(userRef);
        if (existing) {
          if (input.key !== undefined && input.key !== existing.key) {
            throw invalid(`the body's key '${input.key}' does not match user '${existing.key}'`, [
              "body",
              "key",
            ]);
          }
          const row = await replaceUserRecord(resolver, existing, input, changes);
          return { user: await readOne(resolver.db, environment, row), created: false };
        }
        const key = input.key ?? userRef;
        if (key !== userRef) {
          throw invalid(`the body's key '${key}' does not match the path's '${userRef}'`, ["body", "key"]);
        }
        if (!USER_KEY_RE.test(key))
          throw invalid(`user key '${key}' must match ${USER_KEY_PATTERN}`, ["path", "user_id"]);
        const row = await createUserRecord(resolver, { ...input, key }, changes);
        return { user: await readOne(resolver.db, environment, row), created: true };
      });
    },

    async update(
      principal: Principal,
      projRef: string,
      envRef: string,
      userRef: string,
      input: UserUpdate,
    ): Promise<UserRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      return write(environment, async (resolver, changes) => {
        const existing = await resolver.requireUser(userRef);
        const row = await updateUser(resolver.db, environment.id, existing.id, {
          ...(input.email !== undefined && { email: input.email }),
          ...(input.first_name !== undefined && { first_name: input.first_name }),
          ...(input.last_name !== undefined && { last_name: input.last_name }),
          ...(input.attributes !== undefined && { attributes: toJson(input.attributes) }),
          updated_at: now(),
        });
        changes.push(userChange(row));
        return readOne(resolver.db, environment, row);
      });
    },

    /** The user's role assignments go with it. */
    async remove(principal: Principal, projRef: string, envRef: string, userRef: string): Promise<void> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      await write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(userRef);
        await deleteUsers(resolver.db, environment.id, [user.id]);
        changes.push(userDeleteChange(user.key));
      });
    },

    async assignRole(
      principal: Principal,
      projRef: string,
      envRef: string,
      userRef: string,
      input: UserRoleCreate,
    ): Promise<RoleAssignmentRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      return write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(userRef);
        const [written] = await assignRoles(resolver, user, [input], changes, "fail");
        if (!written) throw new Error("assignment not written");
        return assignmentRead(written);
      });
    },

    async unassignRole(
      principal: Principal,
      projRef: string,
      envRef: string,
      userRef: string,
      input: UserRoleRemove,
    ): Promise<RoleAssignmentRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
      return write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(userRef);
        const removed = await unassignRole(resolver, user, input, changes, "fail");
        if (!removed) throw new Error("assignment not removed");
        return assignmentRead(removed);
      });
    },
  };
}

export type UsersService = ReturnType<typeof createUsersService>;
