import { CompiledQuery, type Kysely, type Selectable } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Dialect } from "../../db/store.ts";
import type { Database, DecisionLogsTable } from "../../db/types.ts";
import { now } from "../../lib/time.ts";

export type DecisionLogRow = Selectable<DecisionLogsTable>;

/** The text fields of a batch entry (`DecisionLogEntry`); the organization and project come from the environment. */
const TEXT_FIELDS = [
  "id",
  "environment_id",
  "pdp_id",
  "query",
  "user_key",
  "action",
  "resource_type",
  "resource_key",
  "tenant",
] as const;
const JSON_FIELDS = ["reason", "input", "result"] as const;
const COLUMNS = [
  ...TEXT_FIELDS,
  "organization_id",
  "project_id",
  "decision",
  ...JSON_FIELDS,
  "revision",
  "latency_us",
  "timestamp",
  "created_at",
];
/** For the SQLite writer thread, which binds each entry's values itself. */
export const DECISION_LOG_COLUMNS: readonly string[] = COLUMNS;
export const DECISION_LOG_JSON_FIELDS: readonly string[] = JSON_FIELDS;

/**
 * Inserts a batch given as the text of a JSON array of `DecisionLogEntry` objects, unpacked by the database's own
 * JSON functions: one statement, two parameters (`created_at`, then the batch), nothing parsed in JavaScript.
 * SQLite's `->` keeps a JSON value's text (JSON null becomes SQL NULL); PostgreSQL's `json` type keeps it as sent.
 * The join with `environments` supplies the organization and project, and leaves out entries of an environment
 * deleted since they were decided rather than failing the batch.
 */
const insertDecisionLogsSql: Record<Dialect, string> = {
  sqlite:
    `insert into decision_logs (${COLUMNS.join(", ")}) select ` +
    [
      ...TEXT_FIELDS.map((c) => `e.value ->> '$.${c}'`),
      "env.organization_id",
      "env.project_id",
      `e.value ->> '$.decision'`,
      ...JSON_FIELDS.map((c) => `nullif(e.value -> '$.${c}', 'null')`),
      `e.value ->> '$.revision'`,
      `e.value ->> '$.latency_us'`,
      `e.value ->> '$.timestamp'`,
      "?",
    ].join(", ") +
    " from json_each(?) as e join environments env on env.id = e.value ->> '$.environment_id'",
  postgres:
    `insert into decision_logs (${COLUMNS.map((c) => `"${c}"`).join(", ")}) select ` +
    [
      ...TEXT_FIELDS.map((c) => `e."${c}"`),
      "env.organization_id",
      "env.project_id",
      "e.decision::int",
      ...JSON_FIELDS.map((c) => `nullif(e."${c}"::text, 'null')`),
      "e.revision",
      "e.latency_us",
      'e."timestamp"',
      "$1",
    ].join(", ") +
    " from json_to_recordset($2::json) as e(" +
    [
      ...TEXT_FIELDS.map((c) => `"${c}" text`),
      "decision boolean",
      ...JSON_FIELDS.map((c) => `"${c}" json`),
      "revision bigint",
      "latency_us integer",
      '"timestamp" text',
    ].join(", ") +
    ') join environments env on env.id = e."environment_id"',
};

/** One statement per batch: one commit, however many entries. */
export async function insertDecisionLogs(
  db: Kysely<Database>,
  dialect: Dialect,
  batch: string,
): Promise<void> {
  await db.executeQuery(CompiledQuery.raw(insertDecisionLogsSql[dialect], [now(), batch]));
}

export interface DecisionLogFilter {
  pdpId?: string | undefined;
  users?: string[] | undefined;
  decision?: boolean | undefined;
  resources?: string[] | undefined;
  tenant?: string | undefined;
  action?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  query?: string | undefined;
}

export async function listDecisionLogs(
  db: Db,
  environmentId: string,
  f: DecisionLogFilter,
  offset: number,
  limit: number,
): Promise<{ rows: DecisionLogRow[]; total: number }> {
  let q = db.selectFrom("decision_logs").where("environment_id", "=", environmentId);
  if (f.pdpId) q = q.where("pdp_id", "=", f.pdpId);
  if (f.users?.length) q = q.where("user_key", "in", f.users);
  if (f.decision !== undefined) q = q.where("decision", "=", f.decision ? 1 : 0);
  if (f.resources?.length) q = q.where("resource_type", "in", f.resources);
  if (f.tenant) q = q.where("tenant", "=", f.tenant);
  if (f.action) q = q.where("action", "=", f.action);
  if (f.from) q = q.where("timestamp", ">=", f.from);
  if (f.to) q = q.where("timestamp", "<=", f.to);
  if (f.query) q = q.where("query", "=", f.query);
  const rows = await q
    .selectAll()
    .orderBy("timestamp", "desc")
    .orderBy("id", "desc")
    .offset(offset)
    .limit(limit)
    .execute();
  const count = await q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

export const findDecisionLog = (
  db: Db,
  environmentId: string,
  id: string,
): Promise<DecisionLogRow | undefined> =>
  db
    .selectFrom("decision_logs")
    .selectAll()
    .where("environment_id", "=", environmentId)
    .where("id", "=", id)
    .executeTakeFirst();

/** One environment at a time, along the (environment_id, timestamp) index: the table has no index on time alone. */
export async function purgeDecisionLogs(db: Db, before: string): Promise<number> {
  const environments = await db.selectFrom("environments").select("id").execute();
  let deleted = 0;
  for (const { id } of environments) {
    const result = await db
      .deleteFrom("decision_logs")
      .where("environment_id", "=", id)
      .where("timestamp", "<", before)
      .executeTakeFirst();
    deleted += Number(result.numDeletedRows);
  }
  return deleted;
}
