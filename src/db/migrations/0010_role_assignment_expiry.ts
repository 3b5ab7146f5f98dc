import { sql, type Kysely } from "kysely";

/**
 * A role assignment may end at an instant (ISO 8601 text, fixed width, so text order is time order); null: never.
 * The purge finds the ended ones through a partial index that holds only assignments with an expiry.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("role_assignments").addColumn("expires_at", "text").execute();
  await db.schema
    .createIndex("role_assignments_expires_idx")
    .on("role_assignments")
    .column("expires_at")
    .where(sql.ref("expires_at"), "is not", null)
    .execute();
}
