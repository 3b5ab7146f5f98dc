import type { Insertable, Selectable, Updateable } from "kysely";
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

/** Records an attempt's outcome on a delivery still leased by `owner`; false when the lease was lost. */
export async function recordAttempt(
  db: Db,
  id: string,
  owner: string,
  set: Updateable<WebhookDeliveriesTable>,
): Promise<boolean> {
  const result = await db
    .updateTable("webhook_deliveries")
    .set({ ...set, lease_owner: null, lease_expires_at: null })
    .where("id", "=", id)
    .where("lease_owner", "=", owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export const disableSubscription = (db: Db, id: string, reason: string, at: string) =>
  db
    .updateTable("webhook_subscriptions")
    .set({ enabled: 0, disabled_reason: reason, updated_at: at })
    .where("id", "=", id)
    .where("enabled", "=", 1)
    .execute();
