import type { Selectable } from "kysely";
import type { Db } from "../db/db.ts";
import type { ProjectsTable } from "../db/types.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { duplicate } from "../lib/errors.ts";
import { idOrKey, newId } from "../lib/ids.ts";
import { fromJsonObject, toJson } from "../lib/json.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { now } from "../lib/time.ts";
import type { EnvironmentCreate } from "./environment.schemas.ts";
import type { ProjectCreate, ProjectRead } from "./project.schemas.ts";
import { createEnvironmentRecords } from "./environment-records.ts";

/**
 * Project records, shared by the modules that create, find or show projects (projects, organizations, api-keys,
 * environment-copy) and by the scope every project path resolves to.
 */

export type ProjectRow = Selectable<ProjectsTable>;

/** A project of the organization, by id or key. */
export const findProject = (db: Db, organizationId: string, ref: string): Promise<ProjectRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("projects")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .where(column, "=", value)
    .executeTakeFirst();
};

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
    await trx.insertInto("projects").values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate("project", input.key);
    throw e;
  }
  for (const env of input.initial_environments ?? DEFAULT_ENVIRONMENTS) {
    await createEnvironmentRecords(trx, box, row, env);
  }
  return row;
}
