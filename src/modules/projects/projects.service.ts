import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Db } from "../../changes/feed.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Principal } from "../../lib/access.ts";
import { duplicate } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { ScopeService } from "../scope/scope.service.ts";
import { assertAccess } from "../../lib/access.ts";
import { createEnvironmentRecords } from "../environments/environments.service.ts";
import type { EnvironmentCreate } from "../environments/environments.schemas.ts";
import {
  deleteProject,
  insertProject,
  listProjects,
  updateProject,
  type ProjectRow,
} from "./projects.repo.ts";
import type { ProjectCreate, ProjectRead, ProjectUpdate } from "./projects.schemas.ts";

/** Optional fields that were never set are left out, as Permit's clients expect (`== undefined` checks). */
export const projectRead = (row: ProjectRow): ProjectRead => ({
  id: row.id,
  key: row.key,
  organization_id: row.organization_id,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  ...(row.urn_namespace !== null && { urn_namespace: row.urn_namespace }),
  settings: fromJsonObject(row.settings),
  ...(row.active_policy_repo_id !== null && { active_policy_repo_id: row.active_policy_repo_id }),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export const DEFAULT_ENVIRONMENTS: EnvironmentCreate[] = [
  { key: "production", name: "Production" },
  { key: "development", name: "Development" },
];

/** Inserts a project with its initial environments; runs inside the caller's transaction. */
export async function createProjectRecords(
  trx: Db,
  box: SecretBox,
  organizationId: string,
  input: ProjectCreate,
): Promise<ProjectRow> {
  const at = now();
  const row: ProjectRow = {
    id: newId(),
    organization_id: organizationId,
    key: input.key,
    name: input.name,
    description: input.description ?? null,
    urn_namespace: input.urn_namespace ?? null,
    settings: toJson(input.settings),
    active_policy_repo_id: input.active_policy_repo_id ?? null,
    created_at: at,
    updated_at: at,
  };
  try {
    await insertProject(trx, row);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate("project", input.key);
    throw e;
  }
  for (const env of input.initial_environments ?? DEFAULT_ENVIRONMENTS) {
    await createEnvironmentRecords(trx, box, row, env);
  }
  return row;
}

export function createProjectsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  scope: ScopeService;
  onEnvironmentDeleted?: (environmentId: string) => void;
}) {
  const { db, box, scope } = deps;
  return {
    async list(principal: Principal, page: PageRequest): Promise<ProjectRead[]> {
      assertAccess(principal, { access: "read" });
      const { rows } = await listProjects(
        db,
        principal.organizationId,
        principal.projectId,
        offsetOf(page),
        page.perPage,
      );
      return rows.map(projectRead);
    },

    async create(principal: Principal, input: ProjectCreate): Promise<ProjectRead> {
      assertAccess(principal, { level: "org", access: "write" });
      const row = await db
        .transaction()
        .execute((trx) => createProjectRecords(trx, box, principal.organizationId, input));
      return projectRead(row);
    },

    async get(principal: Principal, ref: string): Promise<ProjectRead> {
      return projectRead(await scope.project(principal, ref, { access: "read" }));
    },

    async update(principal: Principal, ref: string, input: ProjectUpdate): Promise<ProjectRead> {
      const project = await scope.project(principal, ref, { level: "project", access: "write" });
      const row = await updateProject(db, project.id, {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.settings !== undefined && { settings: toJson(input.settings) }),
        ...(input.active_policy_repo_id !== undefined && {
          active_policy_repo_id: input.active_policy_repo_id,
        }),
        updated_at: now(),
      });
      return projectRead(row);
    },

    /** Removes the project and, through the foreign keys, its environments and everything in them. */
    async remove(principal: Principal, ref: string): Promise<void> {
      const project = await scope.project(principal, ref, { level: "project", access: "write" });
      const envs = await db
        .selectFrom("environments")
        .select("id")
        .where("project_id", "=", project.id)
        .execute();
      await deleteProject(db, project.id);
      for (const env of envs) deps.onEnvironmentDeleted?.(env.id);
    },
  };
}

export type ProjectsService = ReturnType<typeof createProjectsService>;
