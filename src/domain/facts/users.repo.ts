import { sql, type Insertable, type Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import { QueryShapes } from "../../db/query-shapes.ts";
import type { UsersTable } from "../../db/types.ts";
import { isUuid } from "../../lib/ids.ts";
import type { PageRequest } from "../../lib/pagination.ts";
import { afterKey, listPage, type ListKey } from "./list-pages.repo.ts";
import { searchAny, type SearchOperator, type UserRow } from "./facts.repo.ts";
import { assignmentsJoined } from "./role-assignments.repo.ts";

/** The user list, reads and writes of user-records.ts. */

export interface UserFilter {
  search?: string | undefined;
  searchOperator?: SearchOperator | undefined;
  /** A role key or id; "" selects users without any role. */
  role?: string | undefined;
  /** Count instance roles as roles (the role filter, tenant membership). */
  includeInstanceRoles?: boolean | undefined;
  /** Only users holding a role in this tenant. */
  tenantId?: string | undefined;
}

/** The filtered users of one environment; the list and its count share it, so total_count matches the pages. */
function filteredUsers(db: Db, envId: string, f: UserFilter) {
  let q = db.selectFrom("users").where("users.environment_id", "=", envId);
  if (f.search) {
    const columns = ["users.key", "users.email", "users.first_name", "users.last_name"].map((c) =>
      sql.ref(c),
    );
    q = q.where(searchAny(columns, f.search, f.searchOperator));
  }
  if (f.tenantId !== undefined) {
    const tenantId = f.tenantId;
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom("role_assignments as ra")
          .select(sql.lit(1).as("one"))
          .where("ra.environment_id", "=", envId)
          .whereRef("ra.user_id", "=", "users.id")
          .where("ra.tenant_id", "=", tenantId),
      ),
    );
  }
  if (f.role !== undefined) {
    const role = f.role;
    q = q.where((eb) => {
      let sub = eb
        .selectFrom("role_assignments as ra")
        .innerJoin("roles as r", "r.id", "ra.role_id")
        .select(sql.lit(1).as("one"))
        .where("ra.environment_id", "=", envId)
        .whereRef("ra.user_id", "=", "users.id");
      if (f.tenantId !== undefined) sub = sub.where("ra.tenant_id", "=", f.tenantId);
      if (role === "") return eb.not(eb.exists(sub));
      if (!f.includeInstanceRoles) sub = sub.where("ra.resource_instance_id", "is", null);
      sub = isUuid(role) ? sub.where("r.id", "=", role.toLowerCase()) : sub.where("r.key", "=", role);
      return eb.exists(sub);
    });
  }
  return q;
}

/** True when the filter selects every user of the environment. */
export const isUnfiltered = (f: UserFilter): boolean =>
  !f.search && f.role === undefined && f.tenantId === undefined;

export const listUsersQuery = (
  db: Db,
  envId: string,
  f: UserFilter,
  offset: number,
  limit: number,
  after?: ListKey,
) =>
  filteredUsers(db, envId, f)
    .selectAll("users")
    .$if(after !== undefined, (q) => q.where(afterKey("users", after as ListKey)))
    .orderBy("users.created_at")
    .orderBy("users.id")
    .offset(offset)
    .limit(limit);

export const countUsersQuery = (db: Db, envId: string, f: UserFilter) =>
  filteredUsers(db, envId, f).select((eb) => eb.fn.countAll<number>().as("n"));

/** A page of users and their number: the unfiltered list seeks from an anchor and reads the counter. */
export async function listUsers(
  db: Db,
  envId: string,
  f: UserFilter,
  p: PageRequest,
): Promise<{ rows: UserRow[]; total: number }> {
  const { start, total } = await listPage(db, "users", envId, p, !isUnfiltered(f));
  const rows = await listUsersQuery(db, envId, f, start.offset, p.perPage, start.after).execute();
  if (total !== undefined) return { rows, total };
  const count = await countUsersQuery(db, envId, f).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

export interface UserAssignment {
  user_id: string;
  role: string;
  tenant: string;
  instance_key: string | null;
  resource_key: string | null;
}

/** The query behind assignmentsOfUsers (exported so that its plan can be checked). */
export const assignmentsOfUsersQuery = (db: Db, envId: string, userIds: string[]) =>
  assignmentsJoined(db)
    .select([
      "ra.id",
      "ra.created_at",
      "ra.user_id",
      "r.key as role",
      "t.key as tenant",
      "ri.key as instance_key",
      "res.key as resource_key",
    ])
    .where("ra.environment_id", "=", envId)
    .where("ra.user_id", "in", userIds);

/**
 * Every role of the given users, oldest first: what associated_tenants and roles are built from. Sorted here, not
 * in SQL: an ORDER BY on created_at leads SQLite to walk the environment's (environment_id, created_at) index
 * through every assignment instead of looking the few users up by (environment_id, user_id).
 */
export async function assignmentsOfUsers(
  db: Db,
  envId: string,
  userIds: string[],
): Promise<UserAssignment[]> {
  if (userIds.length === 0) return [];
  const rows = await assignmentsOfUsersQuery(db, envId, userIds).execute();
  rows.sort((a, b) =>
    a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1,
  );
  return rows.map(({ id: _id, created_at: _at, ...rest }) => rest);
}

/** The user's insert, built once (QueryShapes): every user created runs it. */
const shapes = new QueryShapes();

/** Inserts one user unless its key is taken in the environment; false when it was. */
export const insertUserIfNew = async (db: Db, row: Insertable<UsersTable>): Promise<boolean> => {
  const result = await shapes.insert(db, "users", [row], (rows) =>
    db
      .insertInto("users")
      .values(rows)
      .onConflict((oc) => oc.columns(["environment_id", "key"]).doNothing()),
  );
  return Number(result.numAffectedRows ?? 0) > 0;
};

export const updateUser = (db: Db, envId: string, id: string, patch: Updateable<UsersTable>) =>
  db
    .updateTable("users")
    .set(patch)
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
