import { CompiledQuery, type Kysely } from "kysely";
import type { Dialect, Store } from "../../db/store.ts";
import type { Database } from "../../db/types.ts";
import { now } from "../../lib/time.ts";
import type { DecisionLogChunk } from "../../pdp/storage.ts";
import { openSqliteDecisionLogWriter } from "./sqlite-threads.ts";

/*
 * Where decision-log chunks are stored: the embedded PDP's sink (through PdpStorage) and the ingest route of
 * standalone PDPs (modules/decision-log) both write through `insertDecisionLogChunk`. The standalone PDP's own sink,
 * its spool on disk, is src/pdp/runtime/decision-spool.ts (the PDP reaches no domain code).
 */

/**
 * Stores a chunk as one row, its entries as the text they were shipped in (bound as bytes and cast to text, which
 * neither SQLite nor PostgreSQL re-encodes: both keep UTF-8). The environment must still exist:
 * a chunk of one deleted since its decisions were made is left out (0 rows). A chunk already stored (a retry
 * after a lost answer) is left as it is. Parameters: PDP, first id, last id, count, created_at, entries,
 * environment.
 */
const INSERT_DECISION_LOG_CHUNK =
  "insert into decision_log_chunks (environment_id, pdp_id, first_id, last_id, count, created_at, entries) " +
  "select id, ?, ?, ?, cast(? as integer), ?, cast(? as text) from environments where id = ? on conflict do nothing";

const insertChunkSql: Record<Dialect, string> = {
  sqlite: INSERT_DECISION_LOG_CHUNK,
  postgres: INSERT_DECISION_LOG_CHUNK.split("?").reduce((text, part, i) => `${text}$${i}${part}`),
};

const chunkParameters = (chunk: DecisionLogChunk, createdAt: string) => [
  chunk.pdpId,
  chunk.firstId,
  chunk.lastId,
  chunk.count,
  createdAt,
  chunk.entries,
  chunk.environmentId,
];

/** One statement per chunk; resolves to the entries stored (0 when the environment is gone or it was stored). */
export async function insertDecisionLogChunk(
  db: Kysely<Database>,
  dialect: Dialect,
  chunk: DecisionLogChunk,
  createdAt: string,
): Promise<number> {
  const result = await db.executeQuery(
    CompiledQuery.raw(insertChunkSql[dialect], chunkParameters(chunk, createdAt)),
  );
  return Number(result.numAffectedRows ?? 0) > 0 ? chunk.count : 0;
}

/**
 * The embedded PDP's sink: on SQLite a connection on a thread of its own (see `openSqliteDecisionLogWriter`), on
 * PostgreSQL one statement per chunk through the pool. A chunk stored is handed to `exported` (log export).
 */
export function openDatabaseDecisionSink(
  store: Store,
  exported?: (chunk: DecisionLogChunk) => void,
): {
  write(chunk: DecisionLogChunk): Promise<void>;
  close(): Promise<void>;
} {
  const writer = store.sqliteFile ? openSqliteDecisionLogWriter(store.sqliteFile) : undefined;
  const db = writer ?? store.db;
  return {
    async write(chunk) {
      if ((await insertDecisionLogChunk(db, store.dialect, chunk, now())) > 0) exported?.(chunk);
    },
    close: async () => writer?.destroy(),
  };
}
