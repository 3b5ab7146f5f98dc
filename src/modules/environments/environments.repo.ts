import type { Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { EnvironmentsTable } from "../../db/types.ts";
import type { EnvironmentRow } from "../../domain/environment-records.ts";

export async function listEnvironments(
  db: Db,
  projectId: string,
  onlyId: string | null,
  offset: number,
  limit: number,
): Promise<EnvironmentRow[]> {
  let q = db.selectFrom("environments").selectAll().where("project_id", "=", projectId);
  if (onlyId) q = q.where("id", "=", onlyId);
  return q.orderBy("created_at").orderBy("id").offset(offset).limit(limit).execute();
}

export const updateEnvironment = (db: Db, id: string, patch: Updateable<EnvironmentsTable>) =>
  db.updateTable("environments").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteEnvironment = (db: Db, id: string) =>
  db.deleteFrom("environments").where("id", "=", id).execute();

/**
 * What `GET .../stats` counts, in one statement: users and tenants from list_counts (kept by triggers), the schema's
 * small tables counted, and whether any decision was logged (one index probe).
 */
export async function environmentCounts(db: Db, environmentId: string) {
  const row = await db
    .selectFrom("list_counts")
    .where("list_counts.environment_id", "=", environmentId)
    .select((eb) => [
      "list_counts.users",
      "list_counts.tenants",
      eb
        .selectFrom("roles")
        .select((e) => e.fn.countAll().as("n"))
        .where("roles.environment_id", "=", environmentId)
        .as("roles"),
      eb
        .selectFrom("role_permissions")
        .select((e) => e.fn.countAll().as("n"))
        .where("role_permissions.environment_id", "=", environmentId)
        .as("policies"),
      eb
        .selectFrom("resources")
        .select((e) => e.fn.countAll().as("n"))
        .where("resources.environment_id", "=", environmentId)
        .where("resources.built_in", "=", 0)
        .as("resources"),
      eb
        .exists(
          eb
            .selectFrom("decision_log_chunks")
            .select("decision_log_chunks.environment_id")
            .where("decision_log_chunks.environment_id", "=", environmentId),
        )
        .as("has_decision_logs"),
    ])
    .executeTakeFirst();
  const n = (value: unknown) => Number(value ?? 0);
  return {
    roles: n(row?.roles),
    users: n(row?.users),
    policies: n(row?.policies),
    resources: n(row?.resources),
    tenants: n(row?.tenants),
    has_decision_logs: Boolean(n(row?.has_decision_logs)),
  };
}
