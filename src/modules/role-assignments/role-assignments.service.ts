import type { Kysely } from "kysely";
import { appendChanges, type ChangeNotifier } from "../../changes/feed.ts";
import type { Database } from "../../db/types.ts";

import { duplicate, invalid, notFound } from "../../lib/errors.ts";
import { isUuid, newId } from "../../lib/ids.ts";
import { fromJsonObject } from "../../lib/json.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { UserRow } from "../../domain/facts/facts.repo.ts";
import {
  Resolver,
  scopedIds,
  userChange,
  writeFacts,
  writeFactsInBulk,
  type Env,
} from "../../domain/facts/facts-write.ts";
import { insertUsers } from "../users/users.repo.ts";
import { USER_KEY_PATTERN } from "../users/users.schemas.ts";
import {
  assignmentsWithKeys,
  countAssignments,
  deleteExpiredAssignments,
  expiredAssignments,
  listAssignments,
  permissionsOfRoles,
  type AssignmentFilter,
} from "./role-assignments.repo.ts";
import type { AssignmentWithKeys } from "../../domain/facts/role-assignments.repo.ts";
import {
  AssignmentBatch,
  assignmentChange,
  assignmentRead,
  assignRoles,
  unassignRole,
} from "../../domain/facts/role-assignment-records.ts";
import type {
  RoleAssignmentCreate,
  RoleAssignmentDetailedRead,
  RoleAssignmentListQuery,
  RoleAssignmentRead,
  RoleAssignmentRemove,
} from "./role-assignments.schemas.ts";

const detailedRead = (a: AssignmentWithKeys, permissions: string[]): RoleAssignmentDetailedRead => ({
  id: a.id,
  role: { id: a.role_id, key: a.role_key, name: a.role_name, permissions },
  user: {
    id: a.user_id,
    key: a.user_key,
    ...(a.user_email !== null && { email: a.user_email }),
    ...(a.user_first_name !== null && { first_name: a.user_first_name }),
    ...(a.user_last_name !== null && { last_name: a.user_last_name }),
    attributes: fromJsonObject(a.user_attributes),
  },
  tenant: {
    id: a.tenant_id,
    key: a.tenant_key,
    name: a.tenant_name,
    attributes: fromJsonObject(a.tenant_attributes),
  },
  ...(a.resource_instance_id !== null &&
    a.instance_key !== null &&
    a.resource_key !== null && {
      resource_instance: {
        id: a.resource_instance_id,
        key: a.instance_key,
        resource: a.resource_key,
        attributes: fromJsonObject(a.instance_attributes),
      },
    }),
  organization_id: a.organization_id,
  project_id: a.project_id,
  environment_id: a.environment_id,
  created_at: a.created_at,
  ...(a.expires_at !== null && { expires_at: a.expires_at }),
});

/** Resolves list filters to ids; undefined means "no filter", an empty list means "nothing can match". */
async function resolveFilter(
  db: Kysely<Database>,
  env: Env,
  q: Pick<RoleAssignmentListQuery, "user" | "role" | "tenant" | "resource" | "resource_instance">,
): Promise<AssignmentFilter | null> {
  const resolver = new Resolver(db, env);
  const ids = async <T extends { id: string }>(
    refs: string[] | undefined,
    find: (ref: string) => Promise<T | undefined>,
  ) => {
    if (refs === undefined || refs.length === 0) return undefined;
    const rows = await Promise.all(refs.map(find));
    return rows.flatMap((r) => (r ? [r.id] : []));
  };
  const filter: AssignmentFilter = {
    userIds: await ids(q.user, resolver.user),
    tenantIds: await ids(q.tenant, resolver.tenant),
    // An expired assignment grants nothing; the purge deletes its row shortly.
    activeAt: now(),
  };
  if (q.role !== undefined && q.role.length > 0) {
    // A role key may name a tenant role and roles of several resources: the filter matches all of them.
    const keys = q.role.filter((r) => !isUuid(r));
    const uuids = q.role.filter(isUuid).map((r) => r.toLowerCase());
    const rows = await db
      .selectFrom("roles")
      .select("id")
      .where("environment_id", "=", env.id)
      .where((eb) =>
        eb.or([
          ...(keys.length > 0 ? [eb("key", "in", keys)] : []),
          ...(uuids.length > 0 ? [eb("id", "in", uuids)] : []),
        ]),
      )
      .execute();
    filter.roleIds = rows.map((r) => r.id);
  }
  if (q.resource !== undefined) {
    const resource = await resolver.resource(q.resource);
    if (!resource) return null;
    filter.resourceId = resource.id;
  }
  if (q.resource_instance !== undefined) {
    const rows = await resolver.instanceMatches(q.resource_instance);
    if (rows.length !== 1 || !rows[0]) return null;
    filter.instanceId = rows[0].id;
  }
  for (const list of [filter.userIds, filter.tenantIds, filter.roleIds]) {
    if (list !== undefined && list.length === 0) return null;
  }
  return filter;
}

export type RoleAssignmentList =
  | RoleAssignmentRead[]
  | RoleAssignmentDetailedRead[]
  | Page<RoleAssignmentRead>
  | Page<RoleAssignmentDetailedRead>;

export function createRoleAssignmentsService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  async function page(
    env: Env,
    q: RoleAssignmentListQuery,
    p: PageRequest,
    detailed: boolean,
  ): Promise<{ data: RoleAssignmentRead[] | RoleAssignmentDetailedRead[]; total: () => Promise<number> }> {
    const filter = await resolveFilter(readDb, env, q);
    if (!filter) return { data: [], total: async () => 0 };
    const rows = await listAssignments(readDb, env.id, filter, offsetOf(p), p.perPage);
    const total = () => countAssignments(readDb, env.id, filter);
    if (!detailed) return { data: rows.map(assignmentRead), total };
    const permissions = await permissionsOfRoles(readDb, env.id, [...new Set(rows.map((r) => r.role_id))]);
    return { data: rows.map((r) => detailedRead(r, permissions.get(r.role_id) ?? [])), total };
  }

  const write = <T>(env: Env, fn: (resolver: Resolver, changes: Change[]) => Promise<T>): Promise<T> =>
    writeFacts(db, env, fn);

  return {
    async list(
      { environment }: EnvScope,
      q: RoleAssignmentListQuery,
      p: PageRequest,
    ): Promise<RoleAssignmentList> {
      const { data, total } = await page(environment, q, p, q.detailed === true);
      if (!q.include_total_count) return data;
      return envelope<RoleAssignmentRead | RoleAssignmentDetailedRead>(
        data,
        await total(),
        p,
      ) as RoleAssignmentList;
    },

    async listDetailed({ environment }: EnvScope, q: RoleAssignmentListQuery, p: PageRequest) {
      const { data, total } = await page(environment, q, p, true);
      return envelope(data as RoleAssignmentDetailedRead[], await total(), p);
    },

    async assign({ environment }: EnvScope, input: RoleAssignmentCreate): Promise<RoleAssignmentRead> {
      return write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(input.user);
        const [written] = await assignRoles(resolver, user, [input], changes, "fail");
        if (!written) throw new Error("assignment not written");
        return assignmentRead(written);
      });
    },

    async unassign({ environment }: EnvScope, input: RoleAssignmentRemove): Promise<RoleAssignmentRead> {
      return write(environment, async (resolver, changes) => {
        const user = await resolver.requireUser(input.user);
        const removed = await unassignRole(resolver, user, input, changes, "fail");
        if (!removed) throw notFound("role assignment", input.role);
        return assignmentRead(removed);
      });
    },

    /** All or nothing: one unknown role or tenant (or user, under the "fail" policy) writes nothing. */
    async bulkAssign(
      env: EnvScope,
      inputs: RoleAssignmentCreate[],
      policy: "fail" | "ignore" | "create",
    ): Promise<{ assignments_created: number }> {
      const { environment } = env;
      return writeFactsInBulk(db, environment, async (resolver, changes) => {
        // Set-based: the users, tenants, roles and existing assignments of the whole request are read in one
        // query each (per 500), the items are then checked in order as before (the first bad one answers), and
        // the new rows are inserted together at the end.
        await resolver.preload({
          users: inputs.map((input) => input.user),
          tenants: inputs.flatMap((input) => (input.tenant === undefined ? [] : [input.tenant])),
          tenantRoles: inputs.flatMap((input) => (input.resource_instance === undefined ? [input.role] : [])),
        });
        const batch = new AssignmentBatch(resolver);
        const idsOf = <T extends { id: string }>(rows: (T | undefined)[]) =>
          rows.flatMap((row) => row?.id ?? []);
        await batch.load(
          idsOf(inputs.map((input) => resolver.known("user", input.user))),
          idsOf(
            inputs.flatMap((input) =>
              input.resource_instance === undefined ? [resolver.known("tenantRole", input.role)] : [],
            ),
          ),
        );
        // One instant for the request: the new rows' created_at and whether an existing assignment has ended.
        const at = now();
        for (const [i, input] of inputs.entries()) {
          const found = resolver.known("user", input.user);
          if (found && batch.assignKnown(found, input, changes, at, ["body", i]) !== undefined) continue;
          let user = found ?? (await resolver.user(input.user));
          if (!user) {
            if (policy === "ignore") continue;
            if (policy === "fail") throw notFound("user", input.user);
            user = await createBareUser(resolver, input.user, changes, ["body", i, "user"]);
          }
          await assignRoles(resolver, user, [input], changes, "skip", ["body", i], batch);
        }
        // Every assignment the items wrote waited in the batch; the flush says how many were new.
        return { assignments_created: await batch.flush(changes) };
      });
    },

    async bulkUnassign(
      env: EnvScope,
      inputs: RoleAssignmentRemove[],
    ): Promise<{ assignments_removed: number }> {
      const { environment } = env;
      return writeFactsInBulk(db, environment, async (resolver, changes) => {
        let removed = 0;
        for (const [i, input] of inputs.entries()) {
          const user = await resolver.requireUser(input.user);
          if (await unassignRole(resolver, user, input, changes, "skip", ["body", i])) removed += 1;
        }
        return { assignments_removed: removed };
      });
    },
  };
}

/**
 * Deletes the assignments whose expiry has come, one transaction per environment and batch, each writing the
 * deletes to the change feed so every PDP drops them too (PDPs stop granting at the instant on their own; this
 * removes the rows). Safe on every instance at once: only the rows a transaction itself deleted are announced.
 * Returns how many this call deleted.
 */
export async function purgeExpiredAssignments(
  deps: { db: Kysely<Database>; notifier: ChangeNotifier },
  at: string = now(),
  batch = 500,
): Promise<number> {
  const { db, notifier } = deps;
  let total = 0;
  for (;;) {
    const due = await expiredAssignments(db, at, batch);
    const byEnvironment = new Map<string, string[]>();
    for (const row of due)
      byEnvironment.set(row.environment_id, [...(byEnvironment.get(row.environment_id) ?? []), row.id]);
    for (const [environmentId, ids] of byEnvironment) {
      const written = await db.transaction().execute(async (trx) => {
        const rows = await assignmentsWithKeys(trx, environmentId, ids);
        const deleted = await deleteExpiredAssignments(trx, environmentId, ids, at);
        if (deleted.size === 0) return null;
        const changes = rows.filter((r) => deleted.has(r.id)).map((r) => assignmentChange(r, "delete"));
        return { count: deleted.size, revision: await appendChanges(trx, environmentId, changes) };
      });
      if (written === null) continue;
      total += written.count;
      await notifier.notify(environmentId, written.revision);
    }
    if (due.length < batch) return total;
  }
}

/** missing_user_policy=create: a user with nothing but its key. */
async function createBareUser(
  resolver: Resolver,
  key: string,
  changes: Change[],
  loc: (string | number)[],
): Promise<UserRow> {
  if (!new RegExp(USER_KEY_PATTERN).test(key) || key.length > 255) {
    throw invalid(`user key '${key}' must match ${USER_KEY_PATTERN}`, loc);
  }
  const at = now();
  const row: UserRow = {
    id: newId(),
    ...scopedIds(resolver.env),
    key,
    email: null,
    first_name: null,
    last_name: null,
    attributes: null,
    created_at: at,
    updated_at: at,
  };
  if ((await insertUsers(resolver.db, [row])).size === 0) {
    // A concurrent request created the user since the lookup: it is used as it is.
    const taken = await resolver.reloadUser(key);
    if (!taken) throw duplicate("user", key);
    return taken;
  }
  changes.push(userChange(row));
  resolver.remember("user", key, row);
  return row;
}

export type RoleAssignmentsService = ReturnType<typeof createRoleAssignmentsService>;
