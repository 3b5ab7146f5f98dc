import type { Kysely } from "kysely";

/**
 * Every decision is an insert into each of the table's b-trees; the index on time alone served only the retention
 * purge, which now goes environment by environment along (environment_id, timestamp).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("decision_logs_time_idx").execute();
}
