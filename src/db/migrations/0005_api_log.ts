import type { Kysely } from "kysely";

/**
 * The API log: one row per external /v2 call. No foreign keys, so a write never waits on another table's locks
 * and a log row outlives a deleted project (it goes with retention). Every history query filters by organization
 * first and reads newest first, so each index ends with (timestamp, id): the order is served by the index.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("api_log")
    .addColumn("id", "text", (c) => c.primaryKey())
    // null for calls without a valid key (401): they belong to no organization
    .addColumn("organization_id", "text")
    .addColumn("project_id", "text")
    .addColumn("project_key", "text")
    .addColumn("environment_id", "text")
    .addColumn("environment_key", "text")
    .addColumn("timestamp", "text", (c) => c.notNull())
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("path", "text", (c) => c.notNull())
    .addColumn("query", "text")
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("success", "integer", (c) => c.notNull())
    .addColumn("duration_ms", "double precision", (c) => c.notNull())
    .addColumn("client_ip", "text", (c) => c.notNull())
    .addColumn("request_id", "text")
    .addColumn("actor_type", "text", (c) => c.notNull())
    .addColumn("actor_id", "text")
    .addColumn("actor_display_name", "text")
    .addColumn("request_body", "text")
    .addColumn("response_body", "text")
    .execute();
  await db.schema
    .createIndex("api_log_org_time_idx")
    .on("api_log")
    .columns(["organization_id", "timestamp", "id"])
    .execute();
  await db.schema
    .createIndex("api_log_project_time_idx")
    .on("api_log")
    .columns(["organization_id", "project_id", "timestamp", "id"])
    .execute();
  await db.schema
    .createIndex("api_log_env_time_idx")
    .on("api_log")
    .columns(["organization_id", "environment_id", "timestamp", "id"])
    .execute();
  // retention purge
  await db.schema.createIndex("api_log_time_idx").on("api_log").column("timestamp").execute();
}
