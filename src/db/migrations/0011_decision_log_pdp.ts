import type { Kysely } from "kysely";

/**
 * The PDP that made a chunk's decisions is the chunk's, not each entry's; entries of older chunks keep their own
 * `pdp_id` and `timestamp` (null here), and new entries take their time from their UUIDv7 id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("decision_log_chunks").addColumn("pdp_id", "text").execute();
}
