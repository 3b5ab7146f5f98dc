import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { notFound } from "../lib/errors.ts";
import { findEnvironment, type EnvironmentRow } from "./environment-records.ts";
import { findProject, type ProjectRow } from "./project-records.ts";

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
 * (src/plugins/auth.ts), after the key's scope and access were checked, so a narrower key learns nothing.
 */
export async function resolvePathScope(
  db: Kysely<Database>,
  organizationId: string,
  projectRef: string,
  environmentRef: string | undefined,
): Promise<ProjectScope | EnvScope> {
  const project = await findProject(db, organizationId, projectRef);
  if (!project) throw notFound("project", projectRef);
  if (environmentRef === undefined) return { organizationId, project };
  const environment = await findEnvironment(db, project.id, environmentRef);
  if (!environment) throw notFound("environment", environmentRef);
  return { organizationId, project, environment };
}
