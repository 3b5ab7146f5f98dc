import type { Kysely } from "kysely";

/**
 * The key whose call created a key (a key made with a member's session records the member, since 0012). No foreign
 * key: an organization's export lists its keys in any order, and a deleted creator is simply not shown.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("api_keys").addColumn("created_by_key_id", "text").execute();
}
