import type { Kysely } from "kysely";
import { openSqliteThread } from "../../db/sqlite-thread.ts";
import type { Database } from "../../db/types.ts";

/**
 * The embedded PDP's decision log on SQLite: a connection on a thread of its own, so no insert runs on the event
 * loop that answers checks. It commits without waiting for the disk (`synchronous = NORMAL`, under WAL): a power
 * failure may cost the last decisions, never an API write. (OFF would also skip the syncs around the checkpoints
 * this connection runs, which copy the API's acknowledged writes into the database file.) It shares the file with
 * the main connection under WAL, so while a chunk is being written the main connection's writes wait for SQLite's
 * one write lock (a chunk of 1,000 decisions takes about a millisecond).
 */
export function openSqliteDecisionLogWriter(file: string): Kysely<Database> {
  return openSqliteThread(file, ["synchronous = NORMAL", "busy_timeout = 10000"], "decision log writer");
}

/**
 * Where the API reads the decision log on SQLite: a read-only connection on a thread of its own. A filtered list
 * unpacks every chunk that may match (hundreds of milliseconds at 100,000 decisions); on the main connection that
 * would hold the event loop that answers the embedded PDP's checks. Under WAL it sees every committed write.
 */
export function openSqliteDecisionLogReader(file: string): Kysely<Database> {
  return openSqliteThread(file, ["query_only = ON", "busy_timeout = 5000"], "decision log reader");
}
