import type { Selectable, SelectQueryBuilder } from "kysely";
import type { Database, EnvironmentsTable, ProjectsTable } from "../db/types.ts";
import { idOrKey } from "../lib/ids.ts";

/** The project and environment refs of a route's path (`:proj_id`, `:env_id`). */
export interface PathRefs {
  project: string;
  environment: string | undefined;
}

/** The rows a path's refs name, read beforehand (undefined: nothing there). */
export interface PathRows {
  project: Selectable<ProjectsTable> | undefined;
  environment: Selectable<EnvironmentsTable> | undefined;
}

const PROJECT_COLUMNS = [
  "id",
  "organization_id",
  "key",
  "name",
  "description",
  "urn_namespace",
  "settings",
  "active_policy_repo_id",
  "created_at",
  "updated_at",
] as const satisfies readonly (keyof ProjectsTable)[];

const ENVIRONMENT_COLUMNS = [
  "id",
  "organization_id",
  "project_id",
  "key",
  "name",
  "description",
  "custom_branch_name",
  "avp_policy_store_id",
  "jwks",
  "settings",
  "revision",
  "changes_kept_after",
  "created_at",
  "updated_at",
] as const satisfies readonly (keyof EnvironmentsTable)[];

// Every column is read: a column added to either table must be added to its list above.
type Unlisted =
  | Exclude<keyof ProjectsTable, (typeof PROJECT_COLUMNS)[number]>
  | Exclude<keyof EnvironmentsTable, (typeof ENVIRONMENT_COLUMNS)[number]>;
const _everyColumn: [Unlisted] extends [never] ? true : never = true;
void _everyColumn;

/** A path's refs as the columns and values they are looked up by (`idOrKey`). */
export interface PathLookup {
  project: { column: "id" | "key"; value: string };
  environment: { column: "id" | "key"; value: string } | undefined;
}

export const pathLookup = (refs: PathRefs): PathLookup => ({
  project: idOrKey(refs.project),
  environment: refs.environment === undefined ? undefined : idOrKey(refs.environment),
});

/**
 * Adds the rows a path's refs name, in the organization of `organizationIdColumn`, to a query of one row (the API
 * key's lookup), as columns `path_project_*` and `path_environment_*`; `pathRowsOf` reads them back. The key's
 * lookup and the path's then cost one round trip instead of three.
 */
export function selectPathRows<DB extends Database, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  organizationIdColumn: string,
  path: PathLookup,
): SelectQueryBuilder<DB, TB, O> {
  const { project, environment } = path;
  // Kysely cannot type joins added to a generic builder: the aliases below are checked by the tests' queries.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let q = (query as SelectQueryBuilder<any, any, any>)
    .leftJoin("projects as path_p", (join) =>
      join
        .onRef("path_p.organization_id", "=", organizationIdColumn)
        .on(`path_p.${project.column}`, "=", project.value),
    )
    .select(PROJECT_COLUMNS.map((c) => `path_p.${c} as path_project_${c}`));
  if (environment !== undefined) {
    q = q
      .leftJoin("environments as path_e", (join) =>
        join
          .onRef("path_e.project_id", "=", "path_p.id")
          .on(`path_e.${environment.column}`, "=", environment.value),
      )
      .select(ENVIRONMENT_COLUMNS.map((c) => `path_e.${c} as path_environment_${c}`));
  }
  return q as SelectQueryBuilder<DB, TB, O>;
}

/** The rows `selectPathRows` added to `row`. */
export function pathRowsOf(row: Record<string, unknown>): PathRows {
  const pick = <T>(prefix: string, columns: readonly string[]): T | undefined =>
    row[`${prefix}id`] === null || row[`${prefix}id`] === undefined
      ? undefined
      : (Object.fromEntries(columns.map((c) => [c, row[`${prefix}${c}`]])) as T);
  return {
    project: pick<Selectable<ProjectsTable>>("path_project_", PROJECT_COLUMNS),
    environment: pick<Selectable<EnvironmentsTable>>("path_environment_", ENVIRONMENT_COLUMNS),
  };
}
