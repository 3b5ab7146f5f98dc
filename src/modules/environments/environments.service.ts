import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope, ProjectScope } from "../../domain/path-scope.ts";
import { createEnvironmentRecords, environmentRead } from "../../domain/environment-records.ts";
import {
  deleteEnvironment,
  environmentCounts,
  listEnvironments,
  updateEnvironment,
} from "./environments.repo.ts";
import type {
  EnvironmentCreate,
  EnvironmentRead,
  EnvironmentStats,
  EnvironmentUpdate,
} from "./environments.schemas.ts";

export function createEnvironmentsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  onDeleted?: (environmentId: string) => void;
}) {
  const { db, box } = deps;
  return {
    async list(
      principal: Principal,
      { project }: ProjectScope,
      page: PageRequest,
    ): Promise<EnvironmentRead[]> {
      const rows = await listEnvironments(
        db,
        project.id,
        principal.environmentId,
        offsetOf(page),
        page.perPage,
      );
      return rows.map(environmentRead);
    },

    async create({ project }: ProjectScope, input: EnvironmentCreate): Promise<EnvironmentRead> {
      const row = await db.transaction().execute((trx) => createEnvironmentRecords(trx, box, project, input));
      return environmentRead(row);
    },

    get: ({ environment }: EnvScope): EnvironmentRead => environmentRead(environment),

    async stats({ environment }: EnvScope): Promise<EnvironmentStats> {
      const counts = await environmentCounts(db, environment.id);
      return {
        ...environmentRead(environment),
        pdp_configs: [],
        stats: { ...counts, members: [], mau: 0 },
      };
    },

    async update({ environment }: EnvScope, input: EnvironmentUpdate): Promise<EnvironmentRead> {
      const row = await updateEnvironment(db, environment.id, {
        ...(input.name !== undefined && { name: input.name }),
        ...(input.description !== undefined && { description: input.description }),
        ...(input.custom_branch_name !== undefined && { custom_branch_name: input.custom_branch_name }),
        ...(input.jwks !== undefined && { jwks: toJson(input.jwks) }),
        ...(input.settings !== undefined && { settings: toJson(input.settings) }),
        updated_at: now(),
      });
      return environmentRead(row);
    },

    /** Removes the environment and, through the foreign keys, everything in it. */
    async remove({ environment }: EnvScope): Promise<void> {
      await deleteEnvironment(db, environment.id);
      deps.onDeleted?.(environment.id);
    },
  };
}

export type EnvironmentsService = ReturnType<typeof createEnvironmentsService>;
