import type { Selectable } from "kysely";
import { appendChanges } from "../changes/feed.ts";
import type { Db } from "../db/db.ts";
import type { EnvironmentsTable, ProjectsTable } from "../db/types.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { duplicate } from "../lib/errors.ts";
import { idOrKey, newId } from "../lib/ids.ts";
import { fromJsonObject, toJson } from "../lib/json.ts";
import type { SecretBox } from "../lib/secrets.ts";
import { now } from "../lib/time.ts";
import type { EnvironmentCreate, EnvironmentRead } from "./environment.schemas.ts";
import { createKeyRecord } from "./api-key-records.ts";
import { builtInResourceChanges, ensureBuiltInResources } from "./built-in-resources.ts";

/**
 * Environment records, shared by the modules that create, find or show environments (environments, projects,
 * environment-copy, api-keys) and by the scope every environment path resolves to.
 */

export type EnvironmentRow = Selectable<EnvironmentsTable>;

/** An environment of the project, by id or key. */
export const findEnvironment = (
  db: Db,
  projectId: string,
  ref: string,
): Promise<EnvironmentRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("environments")
    .selectAll()
    .where("project_id", "=", projectId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export const findEnvironmentById = (db: Db, id: string): Promise<EnvironmentRow | undefined> =>
  db.selectFrom("environments").selectAll().where("id", "=", id).executeTakeFirst();

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
 * Creates an environment as every environment starts: exactly one tenant, `default`, the built-in resources and its
 * own API key.
 * Runs inside the caller's transaction.
 */
export async function createEnvironmentRecords(
  trx: Db,
  box: SecretBox,
  project: Pick<Selectable<ProjectsTable>, "id" | "organization_id">,
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
    changes_kept_after: 0,
    created_at: at,
    updated_at: at,
  };
  try {
    await trx.insertInto("environments").values(row).execute();
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
  await ensureBuiltInResources(trx, [row]);
  row.revision = await appendChanges(trx, row.id, [
    { kind: "tenant", op: "upsert", data: { key: DEFAULT_TENANT, attributes: {} } },
    ...builtInResourceChanges(),
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
