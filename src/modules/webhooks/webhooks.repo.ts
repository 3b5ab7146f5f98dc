import { sql, type Insertable, type Selectable, type Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Dialect } from "../../db/store.ts";
import type { WebhookDeliveriesTable, WebhookSubscriptionsTable } from "../../db/types.ts";

export type SubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

export const insertSubscription = (db: Db, row: Insertable<WebhookSubscriptionsTable>) =>
  db.insertInto("webhook_subscriptions").values(row).execute();

export const findSubscription = (db: Db, organizationId: string, id: string) =>
  db
    .selectFrom("webhook_subscriptions")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .executeTakeFirst();

export async function listSubscriptions(db: Db, organizationId: string, offset: number, limit: number) {
  const base = db.selectFrom("webhook_subscriptions").where("organization_id", "=", organizationId);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy("created_at").orderBy("id").offset(offset).limit(limit).execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export const updateSubscription = (
  db: Db,
  organizationId: string,
  id: string,
  set: Updateable<WebhookSubscriptionsTable>,
) =>
  db
    .updateTable("webhook_subscriptions")
    .set(set)
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();

/** Forgets where a subscription stands in every feed: its next pass starts from its `active_since`. */
export const deleteCursors = (db: Db, subscriptionId: string) =>
  db.deleteFrom("webhook_cursors").where("subscription_id", "=", subscriptionId).execute();

export async function deleteSubscription(db: Db, organizationId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom("webhook_subscriptions")
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function listDeliveries(db: Db, subscriptionId: string, offset: number, limit: number) {
  const base = db.selectFrom("webhook_deliveries").where("subscription_id", "=", subscriptionId);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .offset(offset)
      .limit(limit)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export const findDelivery = (db: Db, subscriptionId: string, id: string) =>
  db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("subscription_id", "=", subscriptionId)
    .where("id", "=", id)
    .executeTakeFirst();

/** Sends a delivery again as soon as a sender is free, whatever became of it (the same `webhook-id`). */
export const requeueDelivery = (db: Db, subscriptionId: string, id: string, at: string) =>
  db
    .updateTable("webhook_deliveries")
    .set({ status: "pending", next_attempt_at: at, lease_owner: null, lease_expires_at: null })
    .where("subscription_id", "=", subscriptionId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();

/** A claimed delivery, with what sending it needs from its subscription. */
export type ClaimedDelivery = DeliveryRow & { url: string; secret_sealed: string };

/**
 * Takes up to `limit` pending deliveries that are due and whose lease is free or expired, of enabled
 * subscriptions: they are ours until `leaseExpiresAt`. PostgreSQL skips rows another instance is claiming at the
 * same moment (SKIP LOCKED), so each delivery goes out from one instance; SQLite has one writer.
 */
export async function claimDeliveries(
  db: Db,
  dialect: Dialect,
  owner: string,
  at: string,
  leaseExpiresAt: string,
  limit: number,
): Promise<ClaimedDelivery[]> {
  let pick = db
    .selectFrom("webhook_deliveries")
    .select("id")
    .where("status", "=", "pending")
    .where("next_attempt_at", "<=", at)
    .where((eb) => eb.or([eb("lease_expires_at", "is", null), eb("lease_expires_at", "<", at)]))
    .where("subscription_id", "in", (eb) =>
      eb.selectFrom("webhook_subscriptions").select("id").where("enabled", "=", 1),
    )
    .orderBy("next_attempt_at")
    .limit(limit);
  if (dialect === "postgres") pick = pick.forUpdate().skipLocked();
  const claimed = await db
    .updateTable("webhook_deliveries")
    .set({ lease_owner: owner, lease_expires_at: leaseExpiresAt })
    .where("id", "in", pick)
    .returningAll()
    .execute();
  if (claimed.length === 0) return [];
  const subscriptions = await db
    .selectFrom("webhook_subscriptions")
    .select(["id", "url", "secret_sealed"])
    .where("id", "in", [...new Set(claimed.map((d) => d.subscription_id))])
    .execute();
  const byId = new Map(subscriptions.map((s) => [s.id, s]));
  return claimed.flatMap((d) => {
    const s = byId.get(d.subscription_id);
    return s ? [{ ...d, url: s.url, secret_sealed: s.secret_sealed }] : [];
  });
}

/** One attempt's outcome: what its delivery's row becomes. */
export interface AttemptOutcome {
  id: string;
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_attempt_at: string;
  last_status_code: number | null;
  last_latency_ms: number;
  last_response: string | null;
  last_error: string | null;
  /** set on success, else the row keeps its own */
  delivered_at: string | null;
}

/**
 * Records a round's outcomes on the deliveries still leased by `owner`, in one statement whatever their number
 * (on SQLite every write waits for the one writer; on PostgreSQL each statement is a round trip). Answers the ids
 * it recorded: a delivery whose lease was lost (expired and taken by another instance) is left to its new owner.
 */
export async function recordAttempts(
  db: Db,
  owner: string,
  outcomes: readonly AttemptOutcome[],
): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const int = (n: number | null) => sql`cast(${n} as integer)`;
  const values = outcomes.map(
    (o) =>
      sql`(${o.id}, ${o.status}, ${int(o.attempts)}, ${o.next_attempt_at}, ${o.last_attempt_at}, ${int(o.last_status_code)}, ${int(o.last_latency_ms)}, ${o.last_response}, ${o.last_error}, ${o.delivered_at})`,
  );
  const result = await sql<{ id: string }>`with v (id, status, attempts, next_attempt_at, last_attempt_at,
      last_status_code, last_latency_ms, last_response, last_error, delivered_at) as (values ${sql.join(values)})
    update webhook_deliveries set status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
      last_attempt_at = v.last_attempt_at, last_status_code = v.last_status_code,
      last_latency_ms = v.last_latency_ms, last_response = v.last_response, last_error = v.last_error,
      delivered_at = coalesce(v.delivered_at, webhook_deliveries.delivered_at), lease_owner = null,
      lease_expires_at = null
    from v
    where webhook_deliveries.id = v.id and webhook_deliveries.lease_owner = ${owner}
    returning webhook_deliveries.id`.execute(db);
  return new Set(result.rows.map((r) => r.id));
}

export const disableSubscription = (db: Db, id: string, reason: string, at: string) =>
  db
    .updateTable("webhook_subscriptions")
    .set({ enabled: 0, disabled_reason: reason, updated_at: at })
    .where("id", "=", id)
    .where("enabled", "=", 1)
    .execute();
