import { PostgresAdapter, sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../db/types.ts";
import { now } from "../lib/time.ts";
import type { Change } from "../pdp/engine/types.ts";
import { recordRevision } from "./context.ts";

export type Db = Kysely<Database> | Transaction<Database>;

/** One entry of an environment's change feed as stored: a change the PDP's engine applies, and where it stands. */
export type StoredChange = Change & { revision: number; seq: number; created_at: string };

/** A listener may return a promise: `notify` resolves when every listener has caught up (or failed). */
type Listener = (environmentId: string, revision: number) => void | Promise<unknown>;

/**
 * The SQL expression of the PostgreSQL channel that announces new revisions to every instance on one schema.
 * Channels are per database, and several schemas (tests, say) may hold a Gatehouse each, so the name carries a
 * digest of the schema (a channel name is at most 63 bytes; a schema name may be that long already).
 */
export const CHANGES_CHANNEL_SQL = "'gatehouse_changes_' || left(md5(coalesce(current_schema(), '')), 16)";

/**
 * Appends the records of one write as the environment's next revision. Call it inside the write's transaction:
 * the row lock on the environment orders concurrent writers, and the feed commits or rolls back with the change.
 * On PostgreSQL the same statement queues a notification `<environment id>:<revision>` on `CHANGES_CHANNEL_SQL`,
 * which PostgreSQL delivers at commit (never for a rollback), so other instances' PDPs wake at once.
 */
export async function appendChanges(trx: Db, environmentId: string, records: Change[]): Promise<number> {
  // Kysely's transactions do not say their dialect; the adapter does.
  const postgres = trx.getExecutor().adapter instanceof PostgresAdapter;
  const row = await trx
    .updateTable("environments")
    .set((eb) => ({ revision: eb("revision", "+", 1) }))
    .where("id", "=", environmentId)
    .returning(
      postgres
        ? [
            "revision",
            sql<void>`pg_notify(${sql.raw(CHANGES_CHANNEL_SQL)}, id || ':' || revision)`.as("notified"),
          ]
        : ["revision"],
    )
    .executeTakeFirstOrThrow();
  const revision = Number(row.revision);
  recordRevision(environmentId, revision);
  if (records.length > 0) {
    const createdAt = now();
    // Chunked so that very large bulk writes stay under the databases' bound-parameter limits.
    for (let start = 0; start < records.length; start += 500) {
      await trx
        .insertInto("changes")
        .values(
          records.slice(start, start + 500).map((r, i) => ({
            environment_id: environmentId,
            revision,
            seq: start + i,
            kind: r.kind,
            op: r.op,
            data: JSON.stringify(r.data),
            created_at: createdAt,
          })),
        )
        .execute();
    }
  }
  return revision;
}

/** The records of revisions afterRevision < r <= upToRevision, in order (whole revisions, never a part of one). */
export async function readChangesAfter(
  db: Db,
  environmentId: string,
  afterRevision: number,
  upToRevision: number,
): Promise<StoredChange[]> {
  const rows = await db
    .selectFrom("changes")
    .selectAll()
    .where("environment_id", "=", environmentId)
    .where("revision", ">", afterRevision)
    .where("revision", "<=", upToRevision)
    .orderBy("revision")
    .orderBy("seq")
    .execute();
  return rows.map(
    (r) =>
      ({
        revision: Number(r.revision),
        seq: r.seq,
        kind: r.kind,
        op: r.op,
        data: JSON.parse(r.data) as unknown,
        created_at: r.created_at,
      }) as StoredChange,
  );
}

/** In-process notification after commit, so the embedded PDP and waiting readers react without polling. */
export class ChangeNotifier {
  private readonly listeners = new Set<Listener>();
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  notify(environmentId: string, revision: number): Promise<void> {
    const pending: Promise<unknown>[] = [];
    for (const listener of this.listeners) {
      const result = listener(environmentId, revision);
      if (result) pending.push(result);
    }
    return pending.length === 0 ? Promise.resolve() : Promise.allSettled(pending).then(() => undefined);
  }
}
