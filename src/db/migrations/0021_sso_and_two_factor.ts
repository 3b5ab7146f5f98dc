import type { Kysely } from "kysely";

/**
 * Single sign-on and a second factor (issue 43): an organization's login settings (its OpenID Connect provider,
 * the client secret sealed, whether it requires SSO or a second factor), the sign-ins under way (state, nonce and
 * PKCE verifier, kept here and used once), members' TOTP secrets (sealed) and recovery codes (Argon2id), and how
 * each session was opened.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("org_login_settings")
    .addColumn("organization_id", "text", (c) =>
      c.primaryKey().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("require_two_factor", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("require_sso", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("sso_provider_name", "text")
    .addColumn("sso_issuer", "text")
    .addColumn("sso_client_id", "text")
    .addColumn("sso_client_secret_sealed", "text")
    // a JSON array of lower-cased domains
    .addColumn("sso_allowed_domains", "text")
    .addColumn("sso_new_member_access", "text")
    .addColumn("break_glass_member_id", "text", (c) => c.references("members.id").onDelete("set null"))
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("sso_logins")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("state_hash", "text", (c) => c.notNull().unique())
    .addColumn("organization_id", "text", (c) =>
      c.notNull().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("nonce", "text", (c) => c.notNull())
    .addColumn("code_verifier", "text", (c) => c.notNull())
    .addColumn("next_path", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("expires_at", "text", (c) => c.notNull())
    .addColumn("used_at", "text")
    .execute();

  await db.schema
    .createTable("member_totp")
    .addColumn("member_id", "text", (c) => c.primaryKey().references("members.id").onDelete("cascade"))
    .addColumn("secret_sealed", "text", (c) => c.notNull())
    .addColumn("confirmed_at", "text")
    // the last time step a code was accepted for: a code works once
    .addColumn("last_step", "integer")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("member_recovery_codes")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("member_id", "text", (c) => c.notNull().references("members.id").onDelete("cascade"))
    .addColumn("code_hash", "text", (c) => c.notNull())
    .addColumn("used_at", "text")
    .execute();
  await db.schema
    .createIndex("member_recovery_codes_member")
    .on("member_recovery_codes")
    .column("member_id")
    .execute();

  // how a session was opened: `password` (a second factor may be due) or `sso`
  await db.schema
    .alterTable("sessions")
    .addColumn("auth_method", "text", (c) => c.notNull().defaultTo("password"))
    .execute();
}
