import { performance } from "node:perf_hooks";
import Sqlite from "better-sqlite3";
import type { Dialect } from "../../src/db/store.ts";
import { up as oldTable } from "../../src/db/migrations/0007_decision_log.ts";
import { up as oldTimeIndex } from "../../src/db/migrations/0008_decision_log_time_index.ts";
import { openStore } from "../../src/db/store.ts";
import { now } from "../../src/lib/time.ts";
import {
  findDecisionLog,
  listDecisionLogs,
  timeOfId,
  type DecisionLogFilter,
} from "../../src/modules/decision-log/decision-log.repo.ts";
import { insertDecisionLogChunk } from "../../src/domain/decision-log/database-sink.ts";
import {
  openSqliteDecisionLogWriter,
  openSqliteDecisionLogReader,
} from "../../src/domain/decision-log/sqlite-threads.ts";
import { createDecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import type { DecisionLogChunk, DecisionLogEntry } from "../../src/pdp/storage.ts";
import { settings } from "../lib/config.ts";
import { openBenchStore } from "../lib/store.ts";
import { percentile } from "../lib/http.ts";
import { fmt } from "../lib/report.ts";
import { fail, type Context, type Scenario } from "../lib/scenario.ts";

/** What the PDP records for `n` RBAC checks of 10,000 users in 100 tenants, as its logger ships them. */
async function recordChecks(environmentId: string, count: number): Promise<DecisionLogChunk[]> {
  const chunks: DecisionLogChunk[] = [];
  const logger = createDecisionLogger({
    pdpId: "00000000-0000-7000-8000-00000000bead",
    sink: async (chunk) => void chunks.push(chunk),
    flushIntervalMs: 60_000,
  });
  for (let i = 0; i < count; i++) {
    const tenant = `tenant-${i % 100}`;
    logger.record(
      { environmentId },
      {
        query: "check",
        user_key: `user-${i % 10_000}`,
        action: i % 2 === 0 ? "read" : "delete",
        resource_type: "document",
        tenant,
        decision: i % 2 === 0,
        reason:
          i % 2 === 0
            ? { kind: "rbac", role: "viewer", tenant }
            : { kind: "deny", code: "no_permission", message: "no role grants document:delete" },
        revision: 1234,
        latency_us: 3,
      },
    );
  }
  await logger.close();
  return chunks;
}

/**
 * The layout migration 0009 replaced, for the baseline: a row of nineteen values per decision in a table with a
 * primary key and an (environment, time, id) index, written as its writer thread did (parse the batch, bind each
 * row, one transaction per batch).
 */
function oldLayoutWriter(file: string, organizationId: string, projectId: string) {
  const db = new Sqlite(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  db.pragma("foreign_keys = ON");
  const columns = [
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
  ];
  const insert = db.prepare(
    `insert into decision_logs (${columns.join(", ")}) values (${columns.map(() => "?").join(", ")})`,
  );
  const json = (value: unknown) => (value == null ? null : JSON.stringify(value));
  const write = db.transaction((chunk: DecisionLogChunk, createdAt: string) => {
    for (const entry of JSON.parse(Buffer.from(chunk.entries).toString()) as DecisionLogEntry[])
      insert.run([
        entry.id,
        organizationId,
        projectId,
        chunk.environmentId,
        // Entries carry neither since migration 0011: the chunk names its PDP, the id holds the time.
        chunk.pdpId,
        entry.query,
        entry.user_key,
        entry.action,
        entry.resource_type,
        entry.resource_key,
        entry.tenant,
        entry.decision === null ? null : entry.decision ? 1 : 0,
        json(entry.reason),
        json(entry.input),
        json(entry.result),
        entry.revision,
        entry.latency_us,
        entry.timestamp ?? new Date(timeOfId(entry.id)).toISOString(),
        createdAt,
      ]);
  });
  return { write: (chunk: DecisionLogChunk) => write.immediate(chunk, now()), close: () => db.close() };
}

const usPer = (ms: number, count: number) => (ms * 1000) / count;

/** Median of `times` runs of `run`, in ms. */
async function median(times: number, run: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await run();
    ms.push(performance.now() - started);
  }
  return percentile(
    ms.sort((earlier, later) => earlier - later),
    50,
  );
}

/** The longest the event loop went without a turn while `run` ran, in ms. */
async function longestStall(run: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const turn = () => {
    const started = performance.now();
    longest = Math.max(longest, started - last);
    last = started;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  await run();
  running = false;
  return Math.max(longest, performance.now() - last);
}

export interface DecisionLogData {
  /** Microseconds per decision stored, by database and layout. */
  storing: Record<string, Record<string, number>>;
  /** The longest event-loop stall (ms) while listing, on the main connection and on the reader thread. */
  stalls: Record<string, number>;
  /** Milliseconds per list or lookup, by database. */
  reading: Record<string, Record<string, number>>;
}

export const decisionLogScenario: Scenario<DecisionLogData> = {
  name: "decision-log",
  description:
    "What do storing and reading the decision log cost? The cost of storing a decision (SQLite through the writer thread, " +
    "PostgreSQL through the pool) against the row-per-decision layout it replaced, and list and lookup times.",
  async run(ctx: Context): Promise<DecisionLogData> {
    const entries = settings.decisionLog.entries;
    const storing: Record<string, Record<string, number>> = {};
    const reading: Record<string, Record<string, number>> = {};
    const stalls: Record<string, number> = {};
    for (const dialect of ["sqlite", "postgres"] as Dialect[]) {
      const bench = await openBenchStore(ctx.res, dialect);
      try {
        const { environmentId } = bench;
        const chunks = await recordChecks(environmentId, entries);
        /** Decisions in the timed chunks (all but the first). */
        const timed = entries - (chunks[0]?.count ?? 0);
        const ids = chunks.flatMap((chunk) =>
          (JSON.parse(Buffer.from(chunk.entries).toString()) as DecisionLogEntry[]).map((entry) => entry.id),
        );
        let ms: number;
        if (dialect === "sqlite") {
          const writerDb = openSqliteDecisionLogWriter(bench.sqliteFile as string);
          const writer = {
            write: (chunk: DecisionLogChunk) => insertDecisionLogChunk(writerDb, dialect, chunk, now()),
          };
          // The first chunk, untimed, waits for the thread to start.
          await writer.write(chunks[0] as DecisionLogChunk);
          const started = performance.now();
          for (const chunk of chunks.slice(1)) await writer.write(chunk);
          ms = performance.now() - started;
          await writerDb.destroy();

          // The baseline: the same chunks into the old layout, in a database file of its own.
          const file = ctx.res.tempDir("decision-log-old") + "/old.db";
          const old = openStore({ sqliteFile: file });
          await old.db.schema
            .createTable("environments")
            .addColumn("id", "text", (column) => column.primaryKey())
            .execute();
          await old.db
            .insertInto("environments" as never)
            .values({ id: environmentId } as never)
            .execute();
          await oldTable(old.db as never);
          await oldTimeIndex(old.db as never);
          await old.close();
          const oldWriter = oldLayoutWriter(file, bench.organizationId, bench.projectId);
          oldWriter.write(chunks[0] as DecisionLogChunk);
          const tOld = performance.now();
          for (const chunk of chunks.slice(1)) oldWriter.write(chunk);
          const oldMs = performance.now() - tOld;
          oldWriter.close();
          storing[dialect] = { us_per_entry: usPer(ms, timed), old_us_per_entry: usPer(oldMs, timed) };
        } else {
          await insertDecisionLogChunk(bench.store.db, dialect, chunks[0] as DecisionLogChunk, now());
          const started = performance.now();
          for (const chunk of chunks.slice(1))
            await insertDecisionLogChunk(bench.store.db, dialect, chunk, now());
          ms = performance.now() - started;
          storing[dialect] = { us_per_entry: usPer(ms, timed) };
        }
        ctx.log(`${dialect}: stored ${fmt(timed)} decisions in ${fmt(ms)} ms`);

        // Reads go where the API sends them: on SQLite the reader thread.
        const reader =
          dialect === "sqlite" ? openSqliteDecisionLogReader(bench.sqliteFile as string) : undefined;
        const readDb = reader ?? bench.store.db;
        const list = (filter: DecisionLogFilter) => () =>
          listDecisionLogs(readDb, dialect, environmentId, filter, 0, 100);
        const first = await list({})();
        if (first.total !== entries || first.rows[0]?.entry.id !== ids.at(-1))
          fail(`${dialect}: the newest page does not start with the last decision recorded`);
        const alice = await list({ users: ["user-7"] })();
        if (alice.total !== entries / 10_000) fail(`${dialect}: ${alice.total} decisions of user-7`);
        const someId = ids[Math.floor(ids.length / 3)] as string;
        if ((await findDecisionLog(readDb, dialect, environmentId, someId))?.entry.id !== someId)
          fail(`${dialect}: decision ${someId} not found`);
        reading[dialect] = {
          newest_page_ms: await median(7, list({})),
          tenth_page_ms: await median(7, () =>
            listDecisionLogs(readDb, dialect, environmentId, {}, 900, 100),
          ),
          one_user_ms: await median(3, list({ users: ["user-7"] })),
          denied_ms: await median(3, list({ decision: false })),
          by_id_ms: await median(7, () => findDecisionLog(readDb, dialect, environmentId, someId)),
        };
        if (reader) {
          const denied = { decision: false };
          stalls["main_connection_ms"] = await longestStall(() =>
            listDecisionLogs(bench.store.db, dialect, environmentId, denied, 0, 100),
          );
          stalls["reader_thread_ms"] = await longestStall(list(denied));
          await reader.destroy();
        }
      } finally {
        await bench.store.close();
      }
    }
    const sqlite = storing["sqlite"] ?? {};
    ctx.table({
      title: `Storing ${fmt(entries)} decisions (RBAC checks, in the logger's chunks of 1,000)`,
      columns: ["database", "µs per decision", "row per decision (before 0009)", "ratio"],
      rows: [
        [
          "SQLite (writer thread)",
          (sqlite["us_per_entry"] ?? 0).toFixed(2),
          (sqlite["old_us_per_entry"] ?? 0).toFixed(2),
          `${((sqlite["old_us_per_entry"] ?? 0) / (sqlite["us_per_entry"] ?? 1)).toFixed(1)}x cheaper`,
        ],
        ["PostgreSQL (pool)", (storing["postgres"]?.["us_per_entry"] ?? 0).toFixed(2), "-", "-"],
      ],
      notes: [
        "Wall time over the chunks after the first (which waits for the thread or the pool), one after another. The baseline writes the same chunks into the table of migrations 0007/0008 as that layout's writer thread did: parse each chunk, bind nineteen values a row, one transaction a chunk (same SQLite settings: WAL, synchronous = OFF).",
      ],
    });
    ctx.table({
      title: `Reading the decision log at ${fmt(entries)} decisions in one environment (median ms)`,
      columns: ["query", "SQLite", "PostgreSQL"],
      rows: [
        ["newest page (100)", "newest_page_ms"],
        ["10th page (100)", "tenth_page_ms"],
        ["users=user-7 (10 of them)", "one_user_ms"],
        ["decision=false (half of them), first page and total", "denied_ms"],
        ["one decision by id", "by_id_ms"],
      ].map(([label, key]) => [
        label as string,
        (reading["sqlite"]?.[key as string] ?? 0).toFixed(1),
        (reading["postgres"]?.[key as string] ?? 0).toFixed(1),
      ]),
      notes: [
        "In process, through the repository functions the API uses, on the connection it uses (SQLite: the reader thread). A filter unpacks every chunk whose text holds the value; no filter unpacks only the chunks that can hold the page.",
      ],
    });
    ctx.table({
      title: "SQLite: the event loop while the API lists the denied half (its longest stall, ms)",
      columns: ["read on", "longest stall"],
      rows: [
        [
          "the main connection (before: better-sqlite3 holds the loop)",
          (stalls["main_connection_ms"] ?? 0).toFixed(1),
        ],
        ["the reader thread (what the API does)", (stalls["reader_thread_ms"] ?? 0).toFixed(1)],
      ],
      notes: [
        "The longest gap between two turns of the event loop while one list runs, the loop that also answers the embedded PDP's checks. One run each.",
      ],
    });
    return { storing, stalls, reading };
  },
};
