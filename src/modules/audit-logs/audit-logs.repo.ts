import type { Kysely, Selectable } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Database, DecisionLogsTable } from "../../db/types.ts";
import { toJson } from "../../lib/json.ts";
import { now } from "../../lib/time.ts";
import type { DecisionLogEntry } from "../../pdp/decision-log.ts";

export type DecisionLogRow = Selectable<DecisionLogsTable>;

export const toDecisionLogRow = (e: DecisionLogEntry, createdAt: string): DecisionLogRow => ({
  id: e.id,
  organization_id: e.organization_id,
  project_id: e.project_id,
  environment_id: e.environment_id,
  pdp_id: e.pdp_id,
  query: e.query,
  user_key: e.user_key,
  action: e.action,
  resource_type: e.resource_type,
  resource_key: e.resource_key,
  tenant: e.tenant,
  decision: e.decision === null ? null : e.decision ? 1 : 0,
  reason: toJson(e.reason),
  input: toJson(e.input),
  result: toJson(e.result),
  revision: e.revision,
  latency_us: e.latency_us,
  timestamp: e.timestamp,
  created_at: createdAt,
});

/** One transaction per batch: one commit, however many entries. */
export async function insertDecisionLogs(db: Kysely<Database>, entries: DecisionLogEntry[]): Promise<void> {
  const createdAt = now();
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < entries.length; i += 200) {
      await trx
        .insertInto("decision_logs")
        .values(entries.slice(i, i + 200).map((e) => toDecisionLogRow(e, createdAt)))
        .execute();
    }
  });
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

export const purgeDecisionLogs = (db: Db, before: string) =>
  db.deleteFrom("decision_logs").where("timestamp", "<", before).executeTakeFirst();
