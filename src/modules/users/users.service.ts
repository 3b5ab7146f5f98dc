import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Db } from "../../db/db.ts";

import { duplicate, invalid } from "../../lib/errors.ts";

import type { PageRequest } from "../../lib/pagination.ts";

import type { Change } from "../../pdp/engine/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { UserRow } from "../../domain/facts/facts.repo.ts";
import { Resolver, writeFacts, type Env } from "../../domain/facts/facts-write.ts";
import { assignmentRead, assignRoles, unassignRole } from "../../domain/facts/role-assignment-records.ts";
import type { RoleAssignmentRead } from "../role-assignments/role-assignments.schemas.ts";
import { deleteUsers } from "./users.repo.ts";
import {
  USER_KEY_PATTERN,
  type UserCreate,
  type UserListQuery,
  type UserRead,
  type UserReplace,
  type UserUpdate,
} from "./users.schemas.ts";
import {
  createUserRecord,
  insertUserRecord,
  listUserPage,
  patchUserRecord,
  replaceUserRecord,
  userDeleteChange,
  userRead,
  userReads,
} from "../../domain/facts/user-records.ts";
import { type UserRoleCreate, type UserRoleRemove } from "../role-assignments/role-assignments.schemas.ts";

const USER_KEY_RE = new RegExp(USER_KEY_PATTERN);

export function createUsersService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  const write = <T>(env: Env, fn: (resolver: Resolver, changes: Change[]) => Promise<T>): Promise<T> =>
    writeFacts(db, env, fn);

  const readOne = async (d: Db, env: Env, row: UserRow): Promise<UserRead> => {
    const [read] = await userReads(d, env.id, [row]);
    if (!read) throw new Error("user read missing");
    return read;
  };
  /** A user this write created has no roles but those its body assigned: none to read when it assigned none. */
  const readCreated = (d: Db, env: Env, row: UserRow, input: Pick<UserCreate, "role_assignments">) =>
    input.role_assignments?.length ? readOne(d, env, row) : userRead(row, [], false);

  return {
    async list({ environment }: EnvScope, q: UserListQuery, p: PageRequest) {
      return listUserPage(
        readDb,
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

    async get({ environment }: EnvScope, userRef: string): Promise<UserRead> {
      const user = await new Resolver(db, environment).requireUser(userRef);
      return readOne(db, environment, user);
    },

    async create({ environment }: EnvScope, input: UserCreate): Promise<UserRead> {
      return write(environment, async (resolver, changes) =>
        readCreated(resolver.db, environment, await createUserRecord(resolver, input, changes), input),
      );
    },

    /** Creates (201) or replaces (200) the user the path names. */
    async replace(
      env: EnvScope,
      userRef: string,
      input: UserReplace,
    ): Promise<{ user: UserRead; created: boolean }> {
      const { environment } = env;
      return write(environment, async (resolver, changes) => {
        let existing = await resolver.user(userRef);
        if (!existing) {
          const key = input.key ?? userRef;
          if (key !== userRef) {
            throw invalid(`the body's key '${key}' does not match the path's '${userRef}'`, ["body", "key"]);
          }
          if (!USER_KEY_RE.test(key))
            throw invalid(`user key '${key}' must match ${USER_KEY_PATTERN}`, ["path", "user_id"]);
          const row = await insertUserRecord(resolver, { ...input, key }, changes);
          if (row) return { user: await readCreated(resolver.db, environment, row, input), created: true };
          // A concurrent request created the user since the lookup: this PUT replaces it, as if sent later.
          existing = await resolver.reloadUser(userRef);
          if (!existing) throw duplicate("user", key);
        }
        if (input.key !== undefined && input.key !== existing.key) {
          throw invalid(`the body's key '${input.key}' does not match user '${existing.key}'`, [
            "body",
            "key",
          ]);
        }
        const row = await replaceUserRecord(resolver, existing, input, changes);
        return { user: await readOne(resolver.db, environment, row), created: false };
      });
    },

    async update({ environment }: EnvScope, userRef: string, input: UserUpdate): Promise<UserRead> {
      return write(environment, async (resolver, changes) => {
        const existing = await resolver.requireUser(userRef);
        const row = await patchUserRecord(resolver, existing, input, changes);
        return readOne(resolver.db, environment, row);
      });
    },

    /** The user's role assignments go with it. */
    async remove({ environment }: EnvScope, userRef: string): Promise<void> {
      await write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(userRef);
        await deleteUsers(resolver.db, environment.id, [user.id]);
        changes.push(userDeleteChange(user.key));
      });
    },

    async assignRole(
      { environment }: EnvScope,
      userRef: string,
      input: UserRoleCreate,
    ): Promise<RoleAssignmentRead> {
      return write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(userRef);
        const [written] = await assignRoles(resolver, user, [input], changes, "fail");
        if (!written) throw new Error("assignment not written");
        return assignmentRead(written);
      });
    },

    async unassignRole(
      { environment }: EnvScope,
      userRef: string,
      input: UserRoleRemove,
    ): Promise<RoleAssignmentRead> {
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
