import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { appendChanges, type Db } from "../../changes/feed.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Principal } from "../../lib/access.ts";
import { duplicate } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import type { ScopeService } from "../scope/scope.service.ts";
import { createKeyRecord } from "../api-keys/api-keys.service.ts";
import type { ProjectRow } from "../projects/projects.repo.ts";
import {
  deleteEnvironment,
  insertEnvironment,
  listEnvironments,
  updateEnvironment,
  type EnvironmentRow,
} from "./environments.repo.ts";
import type { EnvironmentCreate, EnvironmentRead, EnvironmentUpdate } from "./environments.schemas.ts";

export const environmentRead = (row: EnvironmentRow): EnvironmentRead => ({
  id: row.id,
  key: row.key,
  organization_id: row.organization_id,
  project_id: row.project_id,
  name: row.name,
  description: row.description ?? "",
  custom_branch_name: row.custom_branch_name ?? "",
  avp_policy_store_id: row.avp_policy_store_id ?? "",
  jwks: fromJsonObject(row.jwks),
  settings: fromJsonObject(row.settings),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export const DEFAULT_TENANT = "default";

/**
 * Creates an environment as every environment starts: exactly one tenant, `default`, and its own API key.
 * Runs inside the caller's transaction.
 */
export async function createEnvironmentRecords(
  trx: Db,
  box: SecretBox,
  project: ProjectRow,
  input: EnvironmentCreate,
): Promise<EnvironmentRow> {
  const at = now();
  const row: EnvironmentRow = {
    id: newId(),
    organization_id: project.organization_id,
    project_id: project.id,
    key: input.key,
    name: input.name,
    description: input.description ?? null,
    custom_branch_name: input.custom_branch_name ?? null,
    avp_policy_store_id: null,
    jwks: toJson(input.jwks),
    settings: toJson(input.settings),
    revision: 0,
    created_at: at,
    updated_at: at,
  };
  try {
    await insertEnvironment(trx, row);
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate("environment", input.key);
    throw e;
  }
  await trx
    .insertInto("tenants")
    .values({
      id: newId(),
      organization_id: row.organization_id,
      project_id: row.project_id,
      environment_id: row.id,
      key: DEFAULT_TENANT,
      name: "Default Tenant",
      description: null,
      attributes: null,
      created_at: at,
      updated_at: at,
      last_action_at: at,
    })
    .execute();
  row.revision = await appendChanges(trx, row.id, [
    { kind: "tenant", op: "upsert", data: { key: DEFAULT_TENANT, attributes: {} } },
  ]);
  await createKeyRecord(trx, box, {
    organizationId: row.organization_id,
    projectId: row.project_id,
    environmentId: row.id,
    objectType: "env",
    name: `${row.key} environment key`,
  });
  return row;
}

export function createEnvironmentsService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  scope: ScopeService;
  onDeleted?: (environmentId: string) => void;
}) {
  const { db, box, scope } = deps;
  return {
    async list(principal: Principal, projRef: string, page: PageRequest): Promise<EnvironmentRead[]> {
      const project = await scope.project(principal, projRef, { access: "read" });
      const rows = await listEnvironments(
        db,
        project.id,
        principal.environmentId,
        offsetOf(page),
        page.perPage,
      );
      return rows.map(environmentRead);
    },

    async create(principal: Principal, projRef: string, input: EnvironmentCreate): Promise<EnvironmentRead> {
      const project = await scope.project(principal, projRef, { level: "project", access: "write" });
      const row = await db.transaction().execute((trx) => createEnvironmentRecords(trx, box, project, input));
      return environmentRead(row);
    },

    async get(principal: Principal, projRef: string, envRef: string): Promise<EnvironmentRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "read" });
      return environmentRead(environment);
    },

    async update(
      principal: Principal,
      projRef: string,
      envRef: string,
      input: EnvironmentUpdate,
    ): Promise<EnvironmentRead> {
      const { environment } = await scope.environment(principal, projRef, envRef, { access: "write" });
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
    async remove(principal: Principal, projRef: string, envRef: string): Promise<void> {
      const { environment } = await scope.environment(principal, projRef, envRef, {
        level: "project",
        access: "write",
      });
      await deleteEnvironment(db, environment.id);
      deps.onDeleted?.(environment.id);
    },
  };
}

export type EnvironmentsService = ReturnType<typeof createEnvironmentsService>;
