import type { Kysely } from "kysely";

/**
 * Webhooks (issue 41): subscriptions of an organization or one of its environments, and their deliveries. A
 * delivery row is the outbox: written in the transaction of the change it announces, then claimed by one instance
 * at a time (a lease, as tasks have), sent, and kept with its last attempt's outcome for the delivery log.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("webhook_subscriptions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) =>
      c.notNull().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("project_id", "text")
    .addColumn("environment_id", "text", (c) => c.references("environments.id").onDelete("cascade"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("description", "text")
    .addColumn("events", "text", (c) => c.notNull())
    .addColumn("secret_sealed", "text", (c) => c.notNull())
    .addColumn("enabled", "integer", (c) => c.notNull())
    .addColumn("disabled_reason", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  // the subscriptions a write's environment (or its organization) has, looked up in every write's transaction
  await db.schema
    .createIndex("webhook_subscriptions_org_idx")
    .on("webhook_subscriptions")
    .columns(["organization_id", "environment_id"])
    .execute();
  await db.schema
    .createIndex("webhook_subscriptions_env_idx")
    .on("webhook_subscriptions")
    .column("environment_id")
    .execute();
  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("subscription_id", "text", (c) =>
      c.notNull().references("webhook_subscriptions.id").onDelete("cascade"),
    )
    .addColumn("event_type", "text", (c) => c.notNull())
    .addColumn("payload", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "text", (c) => c.notNull())
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", "text")
    .addColumn("last_attempt_at", "text")
    .addColumn("last_status_code", "integer")
    .addColumn("last_latency_ms", "integer")
    .addColumn("last_response", "text")
    .addColumn("last_error", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("delivered_at", "text")
    .execute();
  // claiming: pending deliveries that are due
  await db.schema
    .createIndex("webhook_deliveries_due_idx")
    .on("webhook_deliveries")
    .columns(["status", "next_attempt_at"])
    .execute();
  // the delivery log of one subscription, newest first; also serves the cascade
  await db.schema
    .createIndex("webhook_deliveries_subscription_idx")
    .on("webhook_deliveries")
    .columns(["subscription_id", "created_at", "id"])
    .execute();
}
