import { sql } from "kysely";
import { isPostgres, type Db } from "../db/db.ts";
import { QueryShapes, SHAPED_ROWS } from "../db/query-shapes.ts";
import { AppError } from "../lib/errors.ts";
import { now } from "../lib/time.ts";
import { recordRevision } from "./context.ts";

/** Where an entry stands in its environment's feed. */
interface FeedPosition {
  revision: number;
  seq: number;
  created_at: string;
}

/**
 * A change as the feed keeps it: the kind of object, what happened to it, and the object. The feed stores and
 * orders them without looking inside; the PDP's engine gives them their types (its `Change`), as `C` below.
 */
export interface FeedRecord {
  kind: string;
  op: string;
  data: unknown;
}

/** One change, and where it stands (a batch's items each get their own `seq`). */
export type StoredChange<C extends FeedRecord = FeedRecord> = C & FeedPosition;

/**
 * Several changes of one revision kept as one record of the feed (one row, one line of the sync route): `data`
 * lists them in order. A bulk write stores and ships its items this way, and PDPs apply them together.
 */
export interface BatchChange<C extends FeedRecord = FeedRecord> {
  kind: "batch";
  op: "apply";
  data: C[];
}

/** One record of the feed as stored and served to PDPs: a single change or a batch of them. */
export type FeedEntry<C extends FeedRecord = FeedRecord> = (C | BatchChange<C>) & FeedPosition;

/** Changes kept in one batch record at most, so that a record stays a modest row (and line) at any write's size. */
export const BATCH_ITEMS = 1000;

/** The changes that an entry carries, in order. */
export const changesOf = <C extends FeedRecord>(entry: C | BatchChange<C>): C[] =>
  entry.kind === "batch" ? (entry as BatchChange<C>).data : [entry as C];

/** A listener may return a promise: `notify` resolves when every listener has caught up (or failed). */
type Listener = (environmentId: string, revision: number) => void | Promise<unknown>;

/**
 * The SQL expression of the PostgreSQL channel that announces new revisions to every instance on one schema.
 * Channels are per database, and several schemas (tests, say) may hold a Gatehouse each, so the name carries a
 * digest of the schema (a channel name is at most 63 bytes; a schema name may be that long already).
 */
export const CHANGES_CHANNEL_SQL = "'gatehouse_changes_' || left(md5(coalesce(current_schema(), '')), 16)";
/** The payload on the same channel that says a background task was created (revisions carry a colon). */
export const TASK_CREATED_PAYLOAD = "task";

/**
 * Appends the records of one write as the environment's next revision. Call it inside the write's transaction:
 * the row lock on the environment orders concurrent writers, and the feed commits or rolls back with the change.
 * On PostgreSQL the same statement queues a notification `<environment id>:<revision>` on `CHANGES_CHANNEL_SQL`,
 * which PostgreSQL delivers at commit (never for a rollback), so other instances' PDPs wake at once. The feed is
 * also the webhooks' outbox: their sender reads it after the commit (src/modules/webhooks/webhooks.outbox.ts).
 */
export async function appendChanges(
  trx: Db,
  environmentId: string,
  records: readonly FeedRecord[],
): Promise<number> {
  const [revision] = await appendRevisions(trx, environmentId, [records]);
  if (revision === undefined) throw new Error("no revision appended");
  recordRevision(environmentId, revision);
  return revision;
}

/**
 * Appends several writes' records as the environment's next revisions, one a write, in order, as appendChanges
 * does for one (a group commit's writes: src/changes/write-groups.ts). Returns their revisions; the caller records
 * them where they belong.
 */
export async function appendRevisions(
  trx: Db,
  environmentId: string,
  writes: readonly (readonly FeedRecord[])[],
): Promise<number[]> {
  const createdAt = now();
  const count = writes.length;
  // `write` is the write's place among them, from 1: its revision is the first one taken plus write - 1.
  const rows = writes.flatMap((records, i) =>
    feedRows(records).map((row) => ({
      environment_id: environmentId,
      created_at: createdAt,
      write: i + 1,
      ...row,
    })),
  );
  let last: number;
  let written = 0;
  if (isPostgres(trx)) {
    written = Math.min(rows.length, INSERT_ROWS);
    last = await appendOnPostgres(trx, environmentId, count, rows.slice(0, written), createdAt);
  } else {
    const [row] = await shapes.rows(trx, "revision", [count, environmentId], ([n, id]) =>
      trx
        .updateTable("environments")
        .set((eb) => ({ revision: eb("revision", "+", n as unknown as number) }))
        .where("id", "=", id as string)
        .returning("revision"),
    );
    if (!row) throw new Error(`environment ${environmentId} is gone`);
    last = Number(row.revision);
  }
  const first = last - count + 1;
  for (let start = written; start < rows.length; start += INSERT_ROWS) {
    const inserted = rows
      .slice(start, start + INSERT_ROWS)
      .map(({ write, ...row }) => ({ ...row, revision: first + write - 1 }));
    await shapes.insert(trx, "changes", inserted, (some) => trx.insertInto("changes").values(some));
  }
  return writes.map((_, i) => first + i);
}

/**
 * PostgreSQL's part of appendRevisions: one statement takes the revisions, stores the first rows and queues the
 * notification; it returns the last revision taken.
 */
async function appendOnPostgres(
  trx: Db,
  environmentId: string,
  count: number,
  rows: readonly { write: number; seq: number; kind: string; op: string; data: string }[],
  createdAt: string,
): Promise<number> {
  // The statement's values in the order appendStatement takes them (its SQL depends only on the count of rows).
  const values: unknown[] = [count, environmentId];
  if (rows.length > 0) {
    values.push(environmentId, count, createdAt);
    for (const row of rows) values.push(row.write, row.seq, row.kind, row.op, row.data);
  }
  const statement = (taking: readonly unknown[]) => appendStatement(taking, rows.length).compile(trx);
  const [row] =
    rows.length <= SHAPED_ROWS
      ? await shapes.rows(trx, `append/${rows.length}`, values, statement)
      : (await trx.executeQuery(statement(values))).rows;
  if (!row) throw new Error(`environment ${environmentId} is gone`);
  return Number(row.revision);
}

/**
 * appendOnPostgres's statement for `rowCount` change rows, taking its values in order from `values` (the calls'
 * own, or QueryShapes' markers).
 */
function appendStatement(values: readonly unknown[], rowCount: number) {
  let next = 0;
  const v = () => values[next++];
  // Template values are evaluated left to right: `v()` takes them in the order they appear in the SQL.
  return sql<{ revision: number }>`with r as (
      update environments set revision = revision + ${v()}::integer where id = ${v()}
      returning id, revision, pg_notify(${sql.raw(CHANGES_CHANNEL_SQL)}, id || ':' || revision)
    )${
      rowCount > 0
        ? sql`, c as (
      insert into changes (environment_id, revision, created_at, seq, kind, op, data)
      select ${v()}, r.revision - ${v()}::integer + v.write, ${v()}, v.seq, v.kind, v.op, v.data
      from r, (values ${sql.join(
        Array.from(
          { length: rowCount },
          () => sql`(${v()}::integer, ${v()}::integer, ${v()}, ${v()}, ${v()})`,
        ),
      )}) as v (write, seq, kind, op, data)
    )`
        : sql``
    }
    select revision from r`;
}

/** The feed's statements, built once per shape (QueryShapes): every write runs them. */
const shapes = new QueryShapes();

/** Rows of the changes table per insert statement. */
const INSERT_ROWS = 500;

/**
 * The rows that store one write's records: a single change is a row of its own; more are one batch row per
 * BATCH_ITEMS, so an import of a thousand items writes (and a PDP reads) one row rather than a thousand.
 */
function feedRows(records: readonly FeedRecord[]): { seq: number; kind: string; op: string; data: string }[] {
  if (records.length === 1) {
    const [r] = records as [FeedRecord];
    return [{ seq: 0, kind: r.kind, op: r.op, data: JSON.stringify(r.data) }];
  }
  const rows = [];
  for (let start = 0; start < records.length; start += BATCH_ITEMS) {
    const items = records
      .slice(start, start + BATCH_ITEMS)
      .map((r) => ({ kind: r.kind, op: r.op, data: r.data }));
    rows.push({ seq: rows.length, kind: "batch", op: "apply", data: JSON.stringify(items) });
  }
  return rows;
}

/**
 * Where an environment's feed stands: its revision now (`head`), and the revision after which the feed holds every
 * change (`keptAfter`; the retention purge removed the changes of the revisions up to it, src/changes/retention.ts).
 */
export interface FeedBounds {
  head: number;
  keptAfter: number;
}

/** The environment's feed bounds, read from its row (undefined when it is gone). */
export async function feedBounds(db: Db, environmentId: string): Promise<FeedBounds | undefined> {
  const row = await db
    .selectFrom("environments")
    .select(["revision", "changes_kept_after"])
    .where("id", "=", environmentId)
    .executeTakeFirst();
  return row && { head: Number(row.revision), keptAfter: Number(row.changes_kept_after) };
}

/** 410 for a reader whose revision `after` precedes the changes kept: it reads the current state, then follows. */
export const revisionGone = (after: number, { head, keptAfter }: FeedBounds) =>
  new AppError(
    "REVISION_GONE",
    `the changes after revision ${after} are no longer kept (the oldest kept follow revision ${keptAfter}); ` +
      `read the current state and follow from revision ${head}`,
    { revision: head, kept_after: keptAfter },
  );

/** A read of the feed: `gone` when the changes after `after` are no longer all kept (and `entries` is empty). */
export interface FeedRead<C extends FeedRecord = FeedRecord> extends FeedBounds {
  gone: boolean;
  /** The last revision the entries cover: the next read's `after`. */
  revision: number;
  entries: FeedEntry<C>[];
}

/**
 * The feed's records of up to `maxRevisions` revisions after `after` as stored, batches kept whole, in order (whole
 * revisions, never a part of one): what PDPs and the change stream read. One statement reads them with the
 * environment's bounds, so they agree: a purge that commits meanwhile either removed none of these records or shows
 * in `keptAfter`, and a read it would cut short is `gone` instead. Undefined when the environment is gone.
 */
export async function readFeedAfter<C extends FeedRecord = FeedRecord>(
  db: Db,
  environmentId: string,
  after: number,
  maxRevisions: number,
): Promise<FeedRead<C> | undefined> {
  const rows = await db
    .selectFrom("environments as e")
    .leftJoin("changes as c", (join) =>
      join
        .onRef("c.environment_id", "=", "e.id")
        .on("c.revision", ">", after)
        .on("c.revision", "<=", after + maxRevisions),
    )
    .select([
      "e.revision as head",
      "e.changes_kept_after as kept_after",
      "c.revision",
      "c.seq",
      "c.kind",
      "c.op",
      "c.data",
      "c.created_at",
    ])
    .where("e.id", "=", environmentId)
    .orderBy("c.revision")
    .orderBy("c.seq")
    .execute();
  const [first] = rows;
  if (!first) return undefined;
  const head = Number(first.head);
  const keptAfter = Number(first.kept_after);
  if (after < keptAfter) return { head, keptAfter, gone: true, revision: after, entries: [] };
  const entries: FeedEntry<C>[] = [];
  for (const r of rows) {
    if (r.revision === null) continue;
    entries.push({
      revision: Number(r.revision),
      seq: r.seq,
      kind: r.kind,
      op: r.op,
      data: JSON.parse(r.data as string) as unknown,
      created_at: r.created_at,
    } as FeedEntry<C>);
  }
  return {
    head,
    keptAfter,
    gone: false,
    revision: Math.max(after, Math.min(head, after + maxRevisions)),
    entries,
  };
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
