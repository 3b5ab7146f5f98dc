import type { Kysely } from "kysely";

/**
 * Moving an organization safely (issue 36): `frozen_at` set while it moves (its writes are refused), and the time
 * and content digest of its last export, so a delete can refuse an organization that changed since.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("organizations").addColumn("frozen_at", "text").execute();
  await db.schema.alterTable("organizations").addColumn("exported_at", "text").execute();
  await db.schema.alterTable("organizations").addColumn("exported_digest", "text").execute();
}
