import { sql, type Insertable, type Selectable } from "kysely";
import { isPostgres, type Db } from "../../db/db.ts";
import { QueryShapes } from "../../db/query-shapes.ts";
import type { RoleAssignmentsTable } from "../../db/types.ts";
import { inChunks } from "./facts.repo.ts";

/** The assignment reads and writes of role-assignment-records.ts (and the tenants module's removal of a member). */

/** A single write's lookup and insert of assignments, built once per shape (QueryShapes). */
const shapes = new QueryShapes();

export type AssignmentRow = Selectable<RoleAssignmentsTable>;

/** An assignment with the keys a read shows. */
export interface AssignmentWithKeys extends AssignmentRow {
  user_key: string;
  role_key: string;
  tenant_key: string;
  instance_key: string | null;
  resource_key: string | null;
  /** What the detailed read shows of the user, role, tenant and instance. */
  user_email: string | null;
  user_first_name: string | null;
  user_last_name: string | null;
  user_attributes: string | null;
  role_name: string;
  tenant_name: string;
  tenant_attributes: string | null;
  instance_attributes: string | null;
}

/** Assignments joined to their role, tenant and instance (with its resource), whose keys reads show. */
export const assignmentsJoined = (db: Db) =>
  db
    .selectFrom("role_assignments as ra")
    .innerJoin("roles as r", "r.id", "ra.role_id")
    .innerJoin("tenants as t", "t.id", "ra.tenant_id")
    .leftJoin("resource_instances as ri", "ri.id", "ra.resource_instance_id")
    .leftJoin("resources as res", "res.id", "ri.resource_id");

export interface AssignmentKey {
  userId: string;
  roleId: string;
  tenantId: string;
  instanceId: string | null;
}

export async function findAssignment(
  db: Db,
  envId: string,
  k: AssignmentKey,
): Promise<AssignmentRow | undefined> {
  const onInstance = k.instanceId !== null;
  const [row] = await shapes.rows(
    db,
    onInstance ? "assignment/instance" : "assignment/tenant",
    [envId, k.userId, k.roleId, onInstance ? k.instanceId : k.tenantId],
    ([e, u, r, where]) => {
      const q = db
        .selectFrom("role_assignments")
        .selectAll()
        .where("environment_id", "=", e as string)
        .where("user_id", "=", u as string)
        .where("role_id", "=", r as string);
      return onInstance
        ? q.where("resource_instance_id", "=", where as string)
        : q.where("tenant_id", "=", where as string).where("resource_instance_id", "is", null);
    },
  );
  return row;
}

/** The tenant-level assignments of the given users in the given roles, one query per 500 users. */
export const tenantAssignmentsOf = (db: Db, envId: string, userIds: string[], roleIds: string[]) =>
  roleIds.length === 0
    ? Promise.resolve([])
    : inChunks<string, AssignmentRow>(userIds, (slice) =>
        db
          .selectFrom("role_assignments")
          .selectAll()
          .where("environment_id", "=", envId)
          .where("user_id", "in", slice)
          .where("role_id", "in", roleIds)
          .where("resource_instance_id", "is", null)
          .execute(),
      );

/**
 * Inserts the assignments that are not held yet and returns the ids it inserted. One held by a transaction that
 * committed after this one looked is skipped too (the insert waits for that transaction).
 *
 * On PostgreSQL one statement whatever the number of rows, each column an array parameter: its text never changes,
 * where a VALUES list of 500 rows (5,000 parameters) was a new statement for PostgreSQL to parse each time and for
 * Kysely to build row by row. SQLite has no arrays: VALUES lists of 500 rows.
 */
export async function insertAssignments(
  db: Db,
  rows: Insertable<RoleAssignmentsTable>[],
): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  if (!isPostgres(db)) {
    const inserted = await inChunks<Insertable<RoleAssignmentsTable>, { id: string }>(rows, async (slice) => {
      const result = await shapes.insert(db, "assignments", slice, (some) =>
        db
          .insertInto("role_assignments")
          .values(some)
          .onConflict((oc) => oc.doNothing())
          .returning("id"),
      );
      return result.rows;
    });
    return new Set(inserted.map((r) => r.id));
  }
  const column = (pick: (row: Insertable<RoleAssignmentsTable>) => string | null | undefined) =>
    rows.map((row) => pick(row) ?? null);
  const columns = [
    column((r) => r.id),
    column((r) => r.organization_id),
    column((r) => r.project_id),
    column((r) => r.environment_id),
    column((r) => r.user_id),
    column((r) => r.role_id),
    column((r) => r.tenant_id),
    column((r) => r.resource_instance_id),
    column((r) => r.created_at),
    column((r) => r.expires_at),
  ];
  // One shape for any number of rows: each column is one array parameter.
  const inserted = await shapes.rows(db, "assignments/unnest", columns, (c) =>
    sql<{ id: string }>`insert into role_assignments (id, organization_id, project_id,
      environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at, expires_at)
    select * from unnest(${c[0]}::text[], ${c[1]}::text[], ${c[2]}::text[], ${c[3]}::text[], ${c[4]}::text[],
      ${c[5]}::text[], ${c[6]}::text[], ${c[7]}::text[], ${c[8]}::text[], ${c[9]}::text[])
    on conflict do nothing returning id`.compile(db),
  );
  return new Set(inserted.map((r) => r.id));
}

/** Deletes one assignment; false when it is gone already (a concurrent transaction or the purge deleted it). */
export async function deleteAssignment(db: Db, envId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom("role_assignments")
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export const deleteAssignments = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db.deleteFrom("role_assignments").where("environment_id", "=", envId).where("id", "in", slice).execute(),
  );
