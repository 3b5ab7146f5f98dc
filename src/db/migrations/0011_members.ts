import type { CreateTableBuilder, Kysely } from "kysely";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Table = CreateTableBuilder<any, any>;

/** What a grant is on: an organization, and a project and environment of it (both null for the organization). */
const GRANT_OBJECT = [
  ["organization_id", "organizations"],
  ["project_id", "projects"],
  ["environment_id", "environments"],
] as const;
const grantObject = (t: Table) =>
  GRANT_OBJECT.reduce(
    (table, [column, parent]) =>
      table.addColumn(column, "text", (c) =>
        (column === "organization_id" ? c.notNull() : c).references(`${parent}.id`).onDelete("cascade"),
      ),
    t,
  );

/** A one-time secret's life: created, expires, used (null until it is). */
const oneTime = (t: Table) =>
  t
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("expires_at", "text", (c) => c.notNull())
    .addColumn("used_at", "text");

/**
 * People (issue 19): members who log in, their grants, server-side sessions, invites and the one-time setup
 * tokens of the first start. Secrets (session tokens, invite codes, setup tokens) are stored only as SHA-256
 * hashes; an invite's code is also sealed so an admin can copy its link again, as with API key secrets.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("members")
    .addColumn("id", "text", (c) => c.primaryKey())
    // lower-cased, so one address is one member
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("password_hash", "text")
    .addColumn("first_name", "text")
    .addColumn("last_name", "text")
    .addColumn("settings", "text")
    .addColumn("onboarding_step", "text", (c) => c.notNull().defaultTo("done"))
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addColumn("last_login", "text")
    .addColumn("last_ip", "text")
    .addColumn("logins_count", "integer", (c) => c.notNull().defaultTo(0))
    .execute();

  await grantObject(
    db.schema
      .createTable("member_grants")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("member_id", "text", (c) => c.notNull().references("members.id").onDelete("cascade")),
  )
    .addColumn("object_type", "text", (c) => c.notNull())
    .addColumn("access_level", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("member_grants_member_idx")
    .on("member_grants")
    .columns(["member_id", "organization_id"])
    .execute();
  await db.schema
    .createIndex("member_grants_org_idx")
    .on("member_grants")
    .columns(["organization_id", "object_type", "access_level"])
    .execute();

  await db.schema
    .createTable("sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("member_id", "text", (c) => c.notNull().references("members.id").onDelete("cascade"))
    // the active organization
    .addColumn("organization_id", "text", (c) => c.references("organizations.id").onDelete("cascade"))
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("last_seen_at", "text", (c) => c.notNull())
    .addColumn("idle_expires_at", "text", (c) => c.notNull())
    .addColumn("expires_at", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("sessions_member_idx").on("sessions").column("member_id").execute();
  await db.schema.createIndex("sessions_expires_idx").on("sessions").column("expires_at").execute();

  await db.schema
    .createTable("invites")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) =>
      c.notNull().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("access_level", "text", (c) => c.notNull())
    .addColumn("code_hash", "text", (c) => c.notNull().unique())
    .addColumn("code_sealed", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("failed_reason", "text")
    .addColumn("member_id", "text", (c) => c.references("members.id").onDelete("set null"))
    .addColumn("created_by_member_id", "text", (c) => c.references("members.id").onDelete("set null"))
    .$call(oneTime)
    .execute();
  await db.schema
    .createIndex("invites_org_idx")
    .on("invites")
    .columns(["organization_id", "created_at"])
    .execute();

  await db.schema
    .createTable("setup_tokens")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .$call(oneTime)
    .execute();

  await db.schema
    .alterTable("api_keys")
    .addColumn("created_by_member_id", "text", (c) => c.references("members.id").onDelete("set null"))
    .execute();
}
