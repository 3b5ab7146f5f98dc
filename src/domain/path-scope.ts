import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { notFound } from "../lib/errors.ts";
import { findEnvironment, type EnvironmentRow } from "./environment-records.ts";
import { findProject, type ProjectRow } from "./project-records.ts";
import type { PathRefs, PathRows } from "./path-rows.ts";

/** The project a route's path names, as a row of the caller's organization. */
export interface ProjectScope {
  organizationId: string;
  project: ProjectRow;
}

/** The project and environment a route's path names. */
export interface EnvScope extends ProjectScope {
  environment: EnvironmentRow;
}

/**
 * Turns the project (and environment) named in a path into rows: 404 when nothing is there. Runs once per request
 * (src/plugins/auth.ts), after the key's scope and access were checked, so a narrower key learns nothing. `read`:
 * the rows, when the key's own lookup read them already (`selectPathRows`).
 */
export async function resolvePathScope(
  db: Kysely<Database>,
  organizationId: string,
  refs: PathRefs,
  read?: PathRows,
): Promise<ProjectScope | EnvScope> {
  const project = read ? read.project : await findProject(db, organizationId, refs.project);
  if (!project) throw notFound("project", refs.project);
  if (refs.environment === undefined) return { organizationId, project };
  const environment = read ? read.environment : await findEnvironment(db, project.id, refs.environment);
  if (!environment) throw notFound("environment", refs.environment);
  return { organizationId, project, environment };
}
