import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import {
  assertAccess,
  assertCoversEnvironment,
  assertCoversProject,
  type Need,
  type Principal,
} from "../lib/access.ts";
import { notFound } from "../lib/errors.ts";
import { findProject, type ProjectRow } from "../modules/projects/projects.repo.ts";
import { findEnvironment, type EnvironmentRow } from "../modules/environments/environments.repo.ts";

export interface EnvScope {
  organizationId: string;
  project: ProjectRow;
  environment: EnvironmentRow;
}

/**
 * Turns the project and environment named in a path into rows, after checking that the key covers them:
 * 403 when it does not (decided before any lookup), 404 when the key covers the path but nothing is there.
 */
export function createScopeService(db: Kysely<Database>) {
  async function project(principal: Principal, projectRef: string, need: Need): Promise<ProjectRow> {
    assertCoversProject(principal, projectRef);
    assertAccess(principal, need);
    const row = await findProject(db, principal.organizationId, projectRef);
    if (!row) throw notFound("project", projectRef);
    return row;
  }

  async function environment(
    principal: Principal,
    projectRef: string,
    envRef: string,
    need: Need,
  ): Promise<EnvScope> {
    assertCoversEnvironment(principal, projectRef, envRef);
    assertAccess(principal, need);
    const proj = await findProject(db, principal.organizationId, projectRef);
    if (!proj) throw notFound("project", projectRef);
    const env = await findEnvironment(db, proj.id, envRef);
    if (!env) throw notFound("environment", envRef);
    return { organizationId: principal.organizationId, project: proj, environment: env };
  }

  return { project, environment };
}

export type ScopeService = ReturnType<typeof createScopeService>;
