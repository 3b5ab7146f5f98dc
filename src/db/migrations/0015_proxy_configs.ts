import type { Kysely } from "kysely";

/**
 * Permit's proxy configs (issue 35): each holds URL mapping rules, which the PDP's `/allowed_url` matches a
 * request's method and URL against. `mapping_rules` is the JSON array of rules as the API reads them, by keys;
 * `secret` is the JSON text of what the client sent: Permit's ProxyConfigRead returns it to any reader.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("proxy_configs")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("project_id", "text", (c) => c.notNull().references("projects.id").onDelete("cascade"))
    .addColumn("organization_id", "text", (c) =>
      c.notNull().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("auth_mechanism", "text", (c) => c.notNull())
    .addColumn("mapping_rules", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addUniqueConstraint("proxy_configs_env_key", ["environment_id", "key"])
    .execute();
}
