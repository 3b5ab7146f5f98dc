import { sql, type Insertable, type Selectable } from "kysely";
import type { Dialect } from "../../db/store.ts";
import type { Db } from "../../db/db.ts";
import { setRuleKeysQuery, toSetRuleRef, type SetRuleRef } from "../../domain/schema/schema.repo.ts";
import { SCHEMA_TABLES } from "../../domain/schema/schema-tables.ts";
import type {
  ActionGroupActionsTable,
  ActionGroupsTable,
  ConditionSetRulesTable,
  ConditionSetsTable,
  Database,
  RelationsTable,
  ResourceActionsTable,
  ResourceAttributesTable,
  ResourcesTable,
  RoleDerivationsTable,
  RoleExtendsTable,
  RolePermissionsTable,
  RolesTable,
} from "../../db/types.ts";

/** Every policy row of one environment, as stored: what a copy reads from the source and the target. */
export interface PolicyRows {
  resources: Selectable<ResourcesTable>[];
  actions: Selectable<ResourceActionsTable>[];
  attributes: Selectable<ResourceAttributesTable>[];
  groups: Selectable<ActionGroupsTable>[];
  groupActions: Selectable<ActionGroupActionsTable>[];
  roles: Selectable<RolesTable>[];
  permissions: Selectable<RolePermissionsTable>[];
  extends: Selectable<RoleExtendsTable>[];
  relations: Selectable<RelationsTable>[];
  derivations: Selectable<RoleDerivationsTable>[];
  conditionSets: Selectable<ConditionSetsTable>[];
  rules: Selectable<ConditionSetRulesTable>[];
}

/** The policy tables, in an order where every row's references come before it. */
export const POLICY_TABLES = [
  ...SCHEMA_TABLES,
  "condition_sets",
  "condition_set_rules",
] as const satisfies readonly (keyof Database)[];
export type PolicyTable = (typeof POLICY_TABLES)[number];

/**
 * One query per table, each filtered by environment. Sequential: inside a transaction there is one connection.
 * Ordered as the API lists them (created_at, then key) so copies keep the order.
 */
export async function readPolicyRows(db: Db, envId: string): Promise<PolicyRows> {
  return {
    resources: await db
      .selectFrom("resources")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    actions: await db
      .selectFrom("resource_actions")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    attributes: await db
      .selectFrom("resource_attributes")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    groups: await db
      .selectFrom("action_groups")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    groupActions: await db
      .selectFrom("action_group_actions")
      .selectAll()
      .where("environment_id", "=", envId)
      .execute(),
    roles: await db
      .selectFrom("roles")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    permissions: await db
      .selectFrom("role_permissions")
      .selectAll()
      .where("environment_id", "=", envId)
      .execute(),
    extends: await db.selectFrom("role_extends").selectAll().where("environment_id", "=", envId).execute(),
    relations: await db
      .selectFrom("relations")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    derivations: await db
      .selectFrom("role_derivations")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .execute(),
    conditionSets: await db
      .selectFrom("condition_sets")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
    rules: await db
      .selectFrom("condition_set_rules")
      .selectAll()
      .where("environment_id", "=", envId)
      .orderBy("created_at")
      .orderBy("key")
      .execute(),
  };
}

const ROWS_PER_STATEMENT = 5000;

/**
 * Inserts many rows of one table, a few thousand per statement, each chunk sent as ONE JSON parameter that the
 * database unpacks (PostgreSQL: json_populate_recordset, SQLite: json_each): building and binding one parameter
 * per value costs far more than the insert itself at this size. Every row must have the same columns. Checks
 * `signal` between chunks.
 */
export async function insertRows<T extends PolicyTable>(
  db: Db,
  dialect: Dialect,
  table: T,
  rows: Insertable<Database[T]>[],
  signal?: AbortSignal,
): Promise<void> {
  const first = rows[0];
  if (!first) return;
  // Column names come from our own row objects (the table's columns), never from a request.
  const columns = Object.keys(first);
  const list = sql.raw(columns.map((c) => `"${c}"`).join(", "));
  const picks =
    dialect === "postgres" ? list : sql.raw(columns.map((c) => `json_extract(value, '$.${c}')`).join(", "));
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    signal?.throwIfAborted();
    const json = JSON.stringify(rows.slice(start, start + ROWS_PER_STATEMENT));
    const source =
      dialect === "postgres"
        ? sql`json_populate_recordset(null::${sql.table(table)}, ${json}::json)`
        : sql`json_each(${json})`;
    await sql`insert into ${sql.table(table)} (${list}) select ${picks} from ${source}`.execute(db);
  }
}

/** Tables whose rows have an id (the link tables are deleted by their owner). */
export type IdTable = Exclude<PolicyTable, "action_group_actions" | "role_permissions" | "role_extends">;

export async function deleteByIds(db: Db, envId: string, table: IdTable, ids: string[]): Promise<void> {
  for (let start = 0; start < ids.length; start += 1000) {
    await db
      .deleteFrom(table as "resources")
      .where("environment_id", "=", envId)
      .where("id", "in", ids.slice(start, start + 1000))
      .execute();
  }
}

/** Removes the links owned by these rows (a group's actions, a role's permissions, parents, derivations). */
export async function deleteLinks(
  db: Db,
  envId: string,
  table: "action_group_actions" | "role_permissions" | "role_extends" | "role_derivations",
  ownerIds: string[],
): Promise<void> {
  const column = table === "action_group_actions" ? "action_group_id" : "role_id";
  for (let start = 0; start < ownerIds.length; start += 1000) {
    await db
      .deleteFrom(table as "role_permissions")
      .where("environment_id", "=", envId)
      .where(column as "role_id", "in", ownerIds.slice(start, start + 1000))
      .execute();
  }
}

export async function updateRow(
  db: Db,
  envId: string,
  table: IdTable,
  id: string,
  patch: Record<string, unknown>,
): Promise<void> {
  await db
    .updateTable(table as "resources")
    .set(patch as Partial<Selectable<ResourcesTable>>)
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .execute();
}

/** Every set rule of the environment, named by keys as the engine names them. */
export async function listRuleKeys(db: Db, envId: string): Promise<SetRuleRef[]> {
  const rows = await setRuleKeysQuery(db, envId).orderBy("csr.created_at").orderBy("csr.key").execute();
  return rows.map(toSetRuleRef);
}

/** Ids in list order: resources (built-in ones are not part of the engine's data), tenant roles, condition sets. */
export async function listEngineObjectIds(
  db: Db,
  envId: string,
): Promise<{ resources: string[]; tenantRoles: string[]; conditionSets: string[] }> {
  const resources = await db
    .selectFrom("resources")
    .select("id")
    .where("environment_id", "=", envId)
    .where("built_in", "=", 0)
    .orderBy("created_at")
    .orderBy("key")
    .execute();
  const tenantRoles = await db
    .selectFrom("roles")
    .select("id")
    .where("environment_id", "=", envId)
    .where("resource_id", "is", null)
    .orderBy("created_at")
    .orderBy("key")
    .execute();
  const conditionSets = await db
    .selectFrom("condition_sets")
    .select("id")
    .where("environment_id", "=", envId)
    .orderBy("created_at")
    .orderBy("key")
    .execute();
  const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
  return { resources: ids(resources), tenantRoles: ids(tenantRoles), conditionSets: ids(conditionSets) };
}

export const insertProxyConfigRow = (db: Db, row: Insertable<Database["proxy_configs"]>) =>
  db.insertInto("proxy_configs").values(row).execute();

export const replaceProxyConfigRow = (
  db: Db,
  envId: string,
  id: string,
  fields: Pick<
    Selectable<Database["proxy_configs"]>,
    "name" | "secret" | "auth_mechanism" | "mapping_rules" | "updated_at"
  >,
) =>
  db
    .updateTable("proxy_configs")
    .set(fields)
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .execute();
