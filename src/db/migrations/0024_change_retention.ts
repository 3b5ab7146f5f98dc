import { sql, type Kysely } from "kysely";

/**
 * Change-feed retention (issue 41): each environment notes the revision after which its feed holds every change
 * (`changes_kept_after`); the purge deletes older rows and moves it in the same transaction, so a reader tells a
 * revision no longer kept from one without changes by reading one row. Feeds already cut short by hand start
 * from their oldest change.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("environments")
    .addColumn("changes_kept_after", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update environments set changes_kept_after =
    coalesce((select min(c.revision) - 1 from changes c where c.environment_id = environments.id), 0)`.execute(
    db,
  );
}
