import type { Kysely } from "kysely";

/**
 * The users of a tenant (GET .../tenants/{t}/users, and the users list filtered by tenant) are found by asking,
 * for each user, whether it holds a role in the tenant. With only (environment_id, tenant_id) to answer that,
 * SQLite read every assignment of the tenant for every user: 20.5 s for a deep page of a tenant of 6,667 users.
 * (environment_id, tenant_id, user_id) answers it with one seek, and lists a tenant's members in user order. It
 * starts with the old index's columns, which it replaces.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex("role_assignments_env_tenant_user_idx")
    .on("role_assignments")
    .columns(["environment_id", "tenant_id", "user_id"])
    .execute();
  await db.schema.dropIndex("role_assignments_env_tenant_idx").execute();
}
