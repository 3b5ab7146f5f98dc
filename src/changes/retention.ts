import { setImmediate } from "node:timers/promises";
import { sql, type Kysely } from "kysely";
import { isPostgres, type Db } from "../db/db.ts";
import type { Database } from "../db/types.ts";
import { toTimestamp } from "../lib/time.ts";

/** How long the change feed keeps an environment's changes. */
export interface ChangeRetention {
  /** Changes younger than this are kept (0: every change is kept forever). */
  days: number;
  /** The changes of an environment's last revisions are kept however old they are. */
  minRevisions: number;
}

/**
 * Rows of the feed a purge deletes per transaction. A batch row holds up to 1,000 changes (about 175 KB of role
 * assignments): SQLite deletes such rows at 0.2 to 0.4 ms each on a loaded machine, and holds the event loop meanwhile.
 */
const PURGE_BATCH_ROWS = 50;

/**
 * Deletes the changes older than the retention, one environment at a time, oldest first, keeping each environment's
 * last `minRevisions` revisions whatever their age. Each batch of `batch` rows is one transaction that also moves the
 * environment's `changes_kept_after` (src/changes/feed.ts), so readers never see a revision in part; the event loop
 * runs between batches. Organizations frozen while they move are left alone (their export reads the feed). On
 * PostgreSQL one instance purges at a time (a session advisory lock); the others skip their run. Returns how many
 * rows went.
 */
export async function purgeChanges(
  db: Kysely<Database>,
  retention: ChangeRetention,
  nowMs = Date.now(),
  batch = PURGE_BATCH_ROWS,
): Promise<number> {
  if (retention.days <= 0) return 0;
  const before = toTimestamp(new Date(nowMs - retention.days * 86_400_000));
  if (!isPostgres(db)) return purgeAll(db, before, retention.minRevisions, batch);
  return db.connection().execute(async (conn) => {
    const lock = sql`hashtext('gatehouse-change-purge:' || coalesce(current_schema(), ''))`;
    const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${lock}) as locked`.execute(
      conn,
    );
    if (!rows[0]?.locked) return 0;
    try {
      return await purgeAll(conn, before, retention.minRevisions, batch);
    } finally {
      await sql`select pg_advisory_unlock(${lock})`.execute(conn);
    }
  });
}

async function purgeAll(db: Kysely<Database>, before: string, minRevisions: number, batch: number) {
  const environments = await db
    .selectFrom("environments as e")
    .innerJoin("organizations as o", "o.id", "e.organization_id")
    .select(["e.id", "e.revision", "e.changes_kept_after"])
    .where("o.frozen_at", "is", null)
    .where((eb) => eb(eb("e.revision", "-", eb.ref("e.changes_kept_after")), ">", minRevisions))
    .execute();
  let deleted = 0;
  for (const env of environments) {
    const keptAfter = Number(env.changes_kept_after);
    const old = await lastRevisionBefore(db, env.id, keptAfter, Number(env.revision) - minRevisions, before);
    const upTo = Math.min(old, await unreadAfter(db, env.id));
    if (upTo > keptAfter) deleted += await purgeUpTo(db, env.id, upTo, batch);
  }
  return deleted;
}

/**
 * The revision after which the environment's enabled webhook subscriptions still have changes to read
 * (src/modules/webhooks/webhooks.outbox.ts): the purge keeps them. Infinity when none is behind.
 */
async function unreadAfter(db: Db, environmentId: string): Promise<number> {
  const row = await db
    .selectFrom("webhook_cursors as c")
    .innerJoin("webhook_subscriptions as s", "s.id", "c.subscription_id")
    .select((eb) => eb.fn.min("c.revision").as("revision"))
    .where("c.environment_id", "=", environmentId)
    .where("s.enabled", "=", 1)
    .executeTakeFirst();
  // A cursor inside a revision (seq below WHOLE_REVISION) still needs that revision's rest: min - 1 keeps it.
  return row?.revision === null || row?.revision === undefined ? Infinity : Number(row.revision) - 1;
}

/**
 * The last revision in (keptAfter, last] whose changes, and every older one's, were written before `before`
 * (keptAfter when none): a binary search over the feed's key, one row read per step, since revisions grow with
 * time. Revisions without rows count as old.
 */
export async function lastRevisionBefore(
  db: Db,
  environmentId: string,
  keptAfter: number,
  last: number,
  before: string,
) {
  /** Whether the first row at or after `revision` is older than `before` (true when there is none). */
  const old = async (revision: number) => {
    const row = await db
      .selectFrom("changes")
      .select("created_at")
      .where("environment_id", "=", environmentId)
      .where("revision", ">=", revision)
      .orderBy("revision")
      .orderBy("seq")
      .limit(1)
      .executeTakeFirst();
    return !row || row.created_at < before;
  };
  if (await old(last)) return last;
  let lo = keptAfter; // old, or nothing to purge
  let hi = last; // not old
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (await old(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Deletes the environment's rows of revisions up to `upTo`, `batch` rows per transaction in key order. A batch may
 * end inside a revision: `changes_kept_after` becomes that revision, whose rest no reader asks for any more.
 */
async function purgeUpTo(db: Kysely<Database>, environmentId: string, upTo: number, batch: number) {
  let deleted = 0;
  for (;;) {
    const bound = await db
      .selectFrom("changes")
      .select(["revision", "seq"])
      .where("environment_id", "=", environmentId)
      .where("revision", "<=", upTo)
      .orderBy("revision")
      .orderBy("seq")
      .offset(batch - 1)
      .limit(1)
      .executeTakeFirst();
    const last = bound ? { revision: Number(bound.revision), seq: bound.seq } : { revision: upTo, seq: -1 };
    deleted += await db.transaction().execute(async (trx) => {
      const gone = await trx
        .deleteFrom("changes")
        .where("environment_id", "=", environmentId)
        .where((eb) =>
          bound
            ? eb.or([
                eb("revision", "<", last.revision),
                eb.and([eb("revision", "=", last.revision), eb("seq", "<=", last.seq)]),
              ])
            : eb("revision", "<=", upTo),
        )
        .executeTakeFirst();
      await trx
        .updateTable("environments")
        .set({ changes_kept_after: last.revision })
        .where("id", "=", environmentId)
        .where("changes_kept_after", "<", last.revision)
        .execute();
      return Number(gone.numDeletedRows);
    });
    if (!bound) return deleted;
    await setImmediate();
  }
}
