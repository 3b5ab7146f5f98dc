import type { Kysely } from "kysely";

/** Every PDP decision, with its reason; separate from the API log. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("decision_logs")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("project_id", "text", (c) => c.notNull())
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("pdp_id", "text", (c) => c.notNull())
    .addColumn("query", "text", (c) => c.notNull())
    .addColumn("user_key", "text")
    .addColumn("action", "text")
    .addColumn("resource_type", "text")
    .addColumn("resource_key", "text")
    .addColumn("tenant", "text")
    .addColumn("decision", "integer")
    .addColumn("reason", "text")
    .addColumn("input", "text")
    .addColumn("result", "text")
    .addColumn("revision", "bigint", (c) => c.notNull())
    .addColumn("latency_us", "integer", (c) => c.notNull())
    .addColumn("timestamp", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("decision_logs_env_time_idx")
    .on("decision_logs")
    .columns(["environment_id", "timestamp", "id"])
    .execute();
  await db.schema.createIndex("decision_logs_time_idx").on("decision_logs").column("timestamp").execute();
}
