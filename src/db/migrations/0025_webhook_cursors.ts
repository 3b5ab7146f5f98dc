import { sql, type Kysely } from "kysely";
import { isPostgres, type Db } from "../db.ts";

/**
 * Webhooks read the change feed (issue 41): a write no longer writes delivery rows; the change's record in the feed,
 * written in its transaction, is the outbox entry. Each subscription keeps, per environment it sees, the position
 * in the feed up to which it has its deliveries (`webhook_cursors`), created when first needed from the
 * subscription's `active_since` (its creation, or its last re-enabling). Subscriptions already there start now.
 * A delivery's body from 2 KB (one event carries many writes' changes) is kept gzip-compressed in `payload_gzip`,
 * `payload` empty then: the row written and then updated with each attempt's outcome stays small. PostgreSQL keeps
 * those bytes as they are (no second compression attempt).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("webhook_subscriptions")
    .addColumn("active_since", "text", (c) => c.notNull().defaultTo(""))
    .execute();
  await sql`update webhook_subscriptions set active_since = ${new Date().toISOString().replace("Z", "+00:00")}`.execute(
    db,
  );
  await db.schema
    .createTable("webhook_cursors")
    .addColumn("subscription_id", "text", (c) =>
      c.notNull().references("webhook_subscriptions.id").onDelete("cascade"),
    )
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("revision", "bigint", (c) => c.notNull())
    .addColumn("seq", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("webhook_cursors_pk", ["subscription_id", "environment_id"])
    .execute();
  const postgres = isPostgres(db as unknown as Db);
  await db.schema
    .alterTable("webhook_deliveries")
    .addColumn("payload_gzip", postgres ? sql`bytea` : "blob")
    .execute();
  if (postgres) {
    await sql`alter table webhook_deliveries alter column payload_gzip set storage external`.execute(db);
  }
  // the retention purge asks what an environment's subscriptions have not read yet
  await db.schema
    .createIndex("webhook_cursors_environment_idx")
    .on("webhook_cursors")
    .column("environment_id")
    .execute();
}
