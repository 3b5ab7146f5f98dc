import type { Kysely } from "kysely";

/**
 * Durable background tasks (environment copy first). A task is created `processing` without an owner; a worker
 * claims it by writing its lease (owner and expiry), renews the lease while it works, and another worker takes the
 * task over once the lease has expired. Tasks go with their (source) environment.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("tasks")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("project_id", "text", (c) => c.notNull())
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("params", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("result", "text")
    .addColumn("error", "text")
    .addColumn("progress", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("started_at", "text")
    .addColumn("finished_at", "text")
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  // claiming: the oldest processing task whose lease is free or expired
  await db.schema
    .createIndex("tasks_claim_idx")
    .on("tasks")
    .columns(["status", "lease_expires_at", "created_at"])
    .execute();
  // reading a task under its environment; also serves the cascade from environments
  await db.schema.createIndex("tasks_env_idx").on("tasks").columns(["environment_id", "id"]).execute();
  // retention purge
  await db.schema.createIndex("tasks_finished_idx").on("tasks").column("finished_at").execute();
}
