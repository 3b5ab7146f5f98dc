import type { Kysely, Transaction } from "kysely";
import type { Database } from "../db/types.ts";
import { now } from "../lib/time.ts";
import { recordRevision } from "./context.ts";

export type Db = Kysely<Database> | Transaction<Database>;

/** One entry of an environment's change feed: what the PDP applies to its indexes. */
export interface ChangeRecord {
  kind: string;
  op: "upsert" | "delete";
  data: unknown;
}

export interface StoredChange extends ChangeRecord {
  revision: number;
  seq: number;
  created_at: string;
}

/** A listener may return a promise: `notify` resolves when every listener has caught up (or failed). */
type Listener = (environmentId: string, revision: number) => void | Promise<unknown>;

/**
 * Appends the records of one write as the environment's next revision. Call it inside the write's transaction:
 * the row lock on the environment orders concurrent writers, and the feed commits or rolls back with the change.
 */
export async function appendChanges(
  trx: Db,
  environmentId: string,
  records: ChangeRecord[],
): Promise<number> {
  const row = await trx
    .updateTable("environments")
    .set((eb) => ({ revision: eb("revision", "+", 1) }))
    .where("id", "=", environmentId)
    .returning("revision")
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
  return rows.map((r) => ({
    revision: Number(r.revision),
    seq: r.seq,
    kind: r.kind,
    op: r.op as ChangeRecord["op"],
    data: JSON.parse(r.data) as unknown,
    created_at: r.created_at,
  }));
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
