import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { ProjectScope } from "../../domain/path-scope.ts";
import { createProjectRecords, projectRead } from "../../domain/project-records.ts";
import { deleteProject, listProjects, updateProject } from "./projects.repo.ts";
import type { ProjectCreate, ProjectRead, ProjectUpdate } from "./projects.schemas.ts";

export function createProjectsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  onEnvironmentDeleted?: (environmentId: string) => void;
}) {
  const { db, box } = deps;
  return {
    async list(principal: Principal, page: PageRequest): Promise<ProjectRead[]> {
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
      const row = await db
        .transaction()
        .execute((trx) => createProjectRecords(trx, box, principal.organizationId, input));
      return projectRead(row);
    },

    get: ({ project }: ProjectScope): ProjectRead => projectRead(project),

    async update({ project }: ProjectScope, input: ProjectUpdate): Promise<ProjectRead> {
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
    async remove({ project }: ProjectScope): Promise<void> {
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
