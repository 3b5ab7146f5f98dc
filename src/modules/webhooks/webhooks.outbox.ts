import { sql, type Kysely } from "kysely";
import { isPostgres, type Db } from "../../db/db.ts";
import type { ChangesTable, Database } from "../../db/types.ts";
import type { ClaimedDelivery } from "./webhooks.repo.ts";
import { BATCH_ITEMS } from "../../changes/feed.ts";
import { insertDeliveries, publicChanges, wants, type PublicChange } from "../../changes/events.ts";
import { lastRevisionBefore } from "../../changes/retention.ts";
import { now } from "../../lib/time.ts";
import { gunzipText, gzipText } from "../../lib/gzip-text.ts";

/**
 * The change feed as the webhooks' outbox. A write stores its changes in the feed in its own transaction and does
 * nothing more for webhooks; the sender (webhooks.dispatcher.ts) turns the feed into deliveries shortly after, in
 * transactions of its own, moving each subscription's cursor (`webhook_cursors`) with the deliveries it writes. So a
 * committed change is announced and a rolled-back one never is, as with a delivery row per write, at a cost per
 * round of the sender rather than per write: one delivery per event type carries the changes of every revision the
 * round read (at most CHANGES_PER_EVENT).
 */

/** A cursor's `seq` once its revision is covered whole. */
export const WHOLE_REVISION = 2_147_483_647;
/** What one pass reads at most: a row of one change weighs 1, a batch row (up to 1,000 changes) BATCH_WEIGHT. */
const PASS_WEIGHT = 200;
const BATCH_WEIGHT = 25;
/** Changes per delivery at most: a bigger round's changes of one type go in several. */
const CHANGES_PER_EVENT = 1000;

interface Position {
  revision: number;
  seq: number;
}

const isAfter = (a: Position, b: Position) =>
  a.revision > b.revision || (a.revision === b.revision && a.seq > b.seq);

/** A subscription as one pass over an environment's feed sees it. */
interface Reader {
  id: string;
  events: string[];
  /** its deliveries cover the feed up to here */
  from: Position;
  /** whether its cursor is new (not yet stored) */
  fresh: boolean;
}

/** Bodies from this size (UTF-16 units, about bytes) are stored gzip-compressed (`payload_gzip`). */
const COMPRESS_FROM = 2048;

/** A draft whose body is kept compressed when large (off the event loop, on libuv's thread pool). */
const compressed = async <D extends { payload: string }>(draft: D) =>
  draft.payload.length < COMPRESS_FROM
    ? draft
    : { ...draft, payload: "", payload_gzip: await gzipText(draft.payload) };

/** The body of a delivery as sent, from its row. */
export const payloadOf = async (row: {
  payload: string;
  payload_gzip: Uint8Array | null;
}): Promise<string> => (row.payload_gzip === null ? row.payload : gunzipText(row.payload_gzip));

/** What a delivery's row holds before its first attempt. */
const NOT_ATTEMPTED = {
  last_attempt_at: null,
  last_status_code: null,
  last_latency_ms: null,
  last_response: null,
  last_error: null,
  delivered_at: null,
};

/** `done`: the feed is covered up to its end; `more`: call again; `busy`: another instance has the feed now. */
export type PassResult = "done" | "more" | "busy";

/**
 * One pass over an environment's feed: reads what its enabled subscriptions have not read (up to PASS_WEIGHT), writes
 * their deliveries and moves their cursors, in one transaction. With `lease`, the deliveries are leased to its
 * sender and answered, to send without claiming them; without, any sender claims them. A subscription without a
 * cursor here starts after the last revision written before its `active_since`. On PostgreSQL one instance at a time passes over an environment (a transaction's advisory
 * lock); another answers `busy` and leaves it to that one.
 */
export async function enqueueFeed(
  db: Kysely<Database>,
  environmentId: string,
  lease?: { owner: string; expiresAt: string },
): Promise<{ result: PassResult; deliveries: ClaimedDelivery[] }> {
  const done = { result: "done" as const, deliveries: [] };
  // Most writes' environments have no subscription: they cost one statement, outside any transaction.
  if ((await subscriptionsOf(db, environmentId)).length === 0) return done;
  return db.transaction().execute(async (trx) => {
    if (isPostgres(trx)) {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(
          hashtext('gatehouse-webhook-feed:' || coalesce(current_schema(), '') || ${environmentId})) as locked`.execute(
        trx,
      );
      if (!rows[0]?.locked) return { result: "busy", deliveries: [] };
    }
    // Read again under the lock: another instance's pass may have moved the cursors meanwhile.
    const found = await subscriptionsOf(trx, environmentId);
    if (found.length === 0) return done;
    const env = found[0]!;
    const head = Number(env.head);
    const readers = await readersOf(trx, environmentId, found);
    const start = readers.reduce((min, r) => (isAfter(min, r.from) ? r.from : min), readers[0]!.from);
    const { rows, more } = await readFeed(trx, environmentId, start);
    const lastRow = rows.at(-1);
    // Revisions commit in order (their writers queue on the environment's row), and `head` was read first: when the
    // pass reads to the feed's end, every revision up to `head` is covered.
    const end: Position =
      lastRow && more
        ? { revision: Number(lastRow.revision), seq: lastRow.seq }
        : { revision: Math.max(head, Number(lastRow?.revision ?? 0)), seq: WHOLE_REVISION };
    const deliveries: ClaimedDelivery[] = [];
    if (rows.length > 0) {
      const scope = {
        organization_id: env.organization_id,
        project_id: env.project_id,
        environment_id: environmentId,
      };
      const at = now();
      const drafts = deliveriesOf(readers, placed(rows), scope, at);
      const written = await insertDeliveries(trx, await Promise.all(drafts.map(compressed)), at, lease);
      const subscriptions = new Map(found.map((s) => [s.id, s]));
      if (lease) {
        written.forEach((row, i) => {
          const { url, secret_sealed } = subscriptions.get(row.subscription_id)!;
          // Sent from memory: the body as built, not its compressed copy.
          deliveries.push({
            ...row,
            payload: drafts[i]!.payload,
            payload_gzip: null,
            ...NOT_ATTEMPTED,
            url,
            secret_sealed,
          });
        });
      }
    }
    const moved = readers
      .map((r) => ({ r, to: isAfter(end, r.from) ? end : r.from }))
      .filter(({ r, to }) => r.fresh || to !== r.from)
      .map(({ r, to }) => ({ subscription_id: r.id, environment_id: environmentId, ...to }));
    if (moved.length > 0) {
      await trx
        .insertInto("webhook_cursors")
        .values(moved)
        .onConflict((oc) =>
          oc.columns(["subscription_id", "environment_id"]).doUpdateSet((eb) => ({
            revision: eb.ref("excluded.revision"),
            seq: eb.ref("excluded.seq"),
          })),
        )
        .execute();
    }
    return { result: more ? "more" : "done", deliveries };
  });
}

/** The enabled subscriptions that see the environment, with the environment's row and their cursors there. */
const subscriptionsOf = (db: Db, environmentId: string) =>
  db
    .selectFrom("environments as e")
    .innerJoin("webhook_subscriptions as s", "s.organization_id", "e.organization_id")
    .leftJoin("webhook_cursors as c", (join) =>
      join.onRef("c.subscription_id", "=", "s.id").onRef("c.environment_id", "=", "e.id"),
    )
    .select([
      "e.organization_id",
      "e.project_id",
      "e.revision as head",
      "e.changes_kept_after",
      "s.id",
      "s.url",
      "s.secret_sealed",
      "s.events",
      "s.active_since",
      "c.revision",
      "c.seq",
    ])
    .where("e.id", "=", environmentId)
    .where("s.enabled", "=", 1)
    .where((eb) => eb.or([eb("s.environment_id", "is", null), eb("s.environment_id", "=", eb.ref("e.id"))]))
    .execute();

/** Each subscription with where it stands in the feed; one without a cursor starts from its `active_since`. */
async function readersOf(
  trx: Db,
  environmentId: string,
  found: Awaited<ReturnType<typeof subscriptionsOf>>,
): Promise<Reader[]> {
  const readers: Reader[] = [];
  for (const row of found) {
    const keptAfter = Number(row.changes_kept_after);
    const fresh = row.revision === null;
    let from: Position = fresh
      ? {
          revision: await lastRevisionBefore(
            trx,
            environmentId,
            keptAfter,
            Number(row.head),
            row.active_since,
          ),
          seq: WHOLE_REVISION,
        }
      : { revision: Number(row.revision), seq: Number(row.seq) };
    // Only when no sender ran for longer than the retention: what was purged cannot be announced any more.
    if (from.revision < keptAfter) from = { revision: keptAfter, seq: WHOLE_REVISION };
    readers.push({ id: row.id, events: JSON.parse(row.events) as string[], from, fresh });
  }
  return readers;
}

/**
 * The feed's rows after `start`, up to PASS_WEIGHT: one statement, with the data of single changes; the data of
 * batch rows (up to 1,000 changes each) is read for the rows taken only.
 */
async function readFeed(trx: Db, environmentId: string, start: Position) {
  const keys = await trx
    .selectFrom("changes")
    .select(["revision", "seq", "kind", "op", "created_at"])
    .select(sql<string | null>`case when kind = 'batch' then null else data end`.as("data"))
    .where("environment_id", "=", environmentId)
    .where(sql<boolean>`(revision, seq) > (${start.revision}, ${start.seq})`)
    .orderBy("revision")
    .orderBy("seq")
    .limit(PASS_WEIGHT)
    .execute();
  let take = 0;
  for (let weight = 0; take < keys.length; take++) {
    weight += keys[take]!.kind === "batch" ? BATCH_WEIGHT : 1;
    if (take > 0 && weight > PASS_WEIGHT) break;
  }
  const rows = keys.slice(0, take);
  const batches = rows.filter((r) => r.data === null);
  if (batches.length > 0) {
    const first = batches[0]!;
    const last = batches.at(-1)!;
    const data = await trx
      .selectFrom("changes")
      .select(["revision", "seq", "data"])
      .where("environment_id", "=", environmentId)
      .where("kind", "=", "batch")
      .where(sql<boolean>`(revision, seq) >= (${first.revision}, ${first.seq})`)
      .where(sql<boolean>`(revision, seq) <= (${last.revision}, ${last.seq})`)
      .execute();
    const byKey = new Map(data.map((d) => [`${d.revision}:${d.seq}`, d.data]));
    for (const row of batches) row.data = byKey.get(`${row.revision}:${row.seq}`) ?? "[]";
  }
  return { rows: rows as FeedRow[], more: take < keys.length || keys.length === PASS_WEIGHT };
}

type FeedRow = Omit<ChangesTable, "environment_id">;

/** A change of the feed as webhooks give it out, with where its row stands and its event type. */
interface Placed {
  position: Position;
  type: string;
  change: PublicChange;
}

/** The public changes of the rows read, each parsed once for every subscription. */
function placed(rows: readonly FeedRow[]): Placed[] {
  const out: Placed[] = [];
  for (const row of rows) {
    const position = { revision: Number(row.revision), seq: row.seq };
    const record = { kind: row.kind, op: row.op, data: JSON.parse(row.data) as unknown };
    for (const change of publicChanges(position.revision, row.created_at, [record])) {
      // A batch row holds BATCH_ITEMS changes, the last one of its revision fewer: its place in the revision follows.
      change.seq += row.seq * BATCH_ITEMS;
      out.push({ position, type: `${change.category}.${change.object_type}`, change });
    }
  }
  return out;
}

/**
 * The subscriptions' deliveries of the changes after their cursors: for each, one per event type it wants (more past
 * CHANGES_PER_EVENT changes), the changes in feed order. Subscriptions at the same place get the same bodies, built
 * once.
 */
function deliveriesOf(
  readers: readonly Reader[],
  changes: readonly Placed[],
  scope: { organization_id: string; project_id: string; environment_id: string },
  at: string,
) {
  const bodies = new Map<string, string[]>();
  /** The bodies of `type`'s changes after `from`. */
  const bodiesOf = (type: string, from: Position) => {
    const key = `${type} ${from.revision} ${from.seq}`;
    let found = bodies.get(key);
    if (!found) {
      const some = changes.filter((c) => c.type === type && isAfter(c.position, from)).map((c) => c.change);
      found = [];
      for (let i = 0; i < some.length; i += CHANGES_PER_EVENT) {
        const part = some.slice(i, i + CHANGES_PER_EVENT);
        const data = {
          ...scope,
          first_revision: part[0]!.revision,
          revision: part.at(-1)!.revision,
          changes: part,
        };
        found.push(JSON.stringify({ type, timestamp: at, data }));
      }
      bodies.set(key, found);
    }
    return found;
  };
  const types = [...new Set(changes.map((c) => c.type))];
  return readers.flatMap((reader) =>
    types
      .filter((type) => wants(reader.events, type))
      .flatMap((type) =>
        bodiesOf(type, reader.from).map((payload) => ({
          subscription_id: reader.id,
          event_type: type,
          payload,
        })),
      ),
  );
}

/**
 * The environments whose feed an enabled subscription has not covered to its end: what a sender passes over at its
 * start and now and then, for writes whose notification it missed (another instance's, or before a crash).
 */
export async function environmentsBehind(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom("environments as e")
    .innerJoin("webhook_subscriptions as s", (join) =>
      join
        .onRef("s.organization_id", "=", "e.organization_id")
        .on("s.enabled", "=", 1)
        .on((eb) => eb.or([eb("s.environment_id", "is", null), eb("s.environment_id", "=", eb.ref("e.id"))])),
    )
    .leftJoin("webhook_cursors as c", (join) =>
      join.onRef("c.subscription_id", "=", "s.id").onRef("c.environment_id", "=", "e.id"),
    )
    .select("e.id")
    .distinct()
    .where((eb) =>
      eb.or([
        eb.and([eb("c.revision", "is", null), eb("e.revision", ">", 0)]),
        eb("e.revision", ">", eb.ref("c.revision")),
        eb.and([eb("e.revision", "=", eb.ref("c.revision")), eb("c.seq", "<", WHOLE_REVISION)]),
      ]),
    )
    .execute();
  return rows.map((r) => r.id);
}
