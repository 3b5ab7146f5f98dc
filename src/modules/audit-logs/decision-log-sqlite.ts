import Sqlite from "better-sqlite3";
import { now } from "../../lib/time.ts";
import type { DecisionLogEntry } from "../../pdp/decision-log.ts";
import { toDecisionLogRow } from "./audit-logs.repo.ts";

const COLUMNS = [
  "id",
  "organization_id",
  "project_id",
  "environment_id",
  "pdp_id",
  "query",
  "user_key",
  "action",
  "resource_type",
  "resource_key",
  "tenant",
  "decision",
  "reason",
  "input",
  "result",
  "revision",
  "latency_us",
  "timestamp",
  "created_at",
] as const;

/**
 * The embedded PDP's decision log on SQLite: its own connection that commits without waiting for the disk
 * (`synchronous = OFF`), so a batch never stalls the event loop on fsync the way the API's durable writes do; a
 * power failure may cost the last decisions, never an API write. The batch is one synchronous transaction, so it
 * cannot interleave with the main connection's transactions; a busy database fails the batch at once (no
 * waiting: this thread may hold that lock) and the logger retries it.
 */
export function createSqliteDecisionLogWriter(file: string) {
  const db = new Sqlite(file);
  db.pragma("synchronous = OFF");
  db.pragma("busy_timeout = 0");
  const insert = db.prepare(
    `insert into decision_logs (${COLUMNS.join(", ")}) values (${COLUMNS.map(() => "?").join(", ")})`,
  );
  const insertAll = db.transaction((entries: DecisionLogEntry[], createdAt: string) => {
    for (const entry of entries) {
      const row = toDecisionLogRow(entry, createdAt);
      insert.run(...COLUMNS.map((c) => row[c]));
    }
  });
  return {
    write: async (entries: DecisionLogEntry[]) => void insertAll.immediate(entries, now()),
    close: async () => void db.close(),
  };
}
