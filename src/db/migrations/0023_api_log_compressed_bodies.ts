import { sql, type Kysely } from "kysely";
import { isPostgres, type Db } from "../db.ts";

/**
 * The API log keeps a large response body gzip-compressed, as bytes (a page of 100 users is 45 KB of JSON, about
 * 4 KB compressed): `response_body_gzip` holds it and `response_body` is null then. PostgreSQL keeps those bytes
 * as they are (`STORAGE EXTERNAL`: no second compression attempt) and compresses large request bodies with lz4
 * rather than pglz when the server has it (a bulk import's body; about five times as fast).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = isPostgres(db as unknown as Db);
  await db.schema
    .alterTable("api_log")
    .addColumn("response_body_gzip", postgres ? sql`bytea` : "blob")
    .execute();
  if (!postgres) return;
  await sql`alter table api_log alter column response_body_gzip set storage external`.execute(db);
  const lz4 = await sql<{ lz4: boolean }>`select 'lz4' = any(enumvals) as lz4 from pg_settings
    where name = 'default_toast_compression'`.execute(db);
  if (lz4.rows[0]?.lz4)
    await sql`alter table api_log alter column request_body set compression lz4`.execute(db);
}
