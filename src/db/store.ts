import fs from "node:fs";
import path from "node:path";
import Sqlite from "better-sqlite3";
import pg from "pg";
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type MigrationResultSet,
} from "kysely";
import type { Database } from "./types.ts";
import { migrations } from "./migrations/index.ts";

export type Dialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The SQLite file (undefined for PostgreSQL and in-memory databases). */
  sqliteFile: string | undefined;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** postgres://... ; when absent, SQLite in `sqliteFile`. */
  databaseUrl?: string | undefined;
  sqliteFile?: string;
  /** PostgreSQL schema to use (tests get one each); created when missing. */
  pgSchema?: string;
  pgPoolSize?: number;
}

/**
 * SQLite transactions begin IMMEDIATE: they take the write lock when they start, waiting for it up to the busy
 * timeout. A deferred transaction that reads, awaits, then writes fails at once with SQLITE_BUSY when another
 * connection to the file (the decision log's writer thread, another process) committed meanwhile; the busy
 * timeout does not apply to that case. This process's own transactions are serialized by Kysely anyway.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly config: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(config);
  }
  override createDriver() {
    return new ImmediateSqliteDriver(this.config);
  }
}

// int8 (revisions, counts) as numbers: they stay far below 2^53.
const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export function openStore(options: StoreOptions): Store {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.pgPoolSize ?? 10,
      types: pgTypes,
      ...(options.pgSchema ? { options: `-c search_path=${options.pgSchema}` } : {}),
    });
    // An idle client that loses its server must not crash the process; the next query reports the problem.
    pool.on("error", () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      dialect: "postgres",
      ping: () => pingDb(db),
      close: () => db.destroy(),
      sqliteFile: undefined,
    };
  }
  const file = options.sqliteFile ?? ":memory:";
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = new Sqlite(file);
  database.pragma("journal_mode = WAL");
  // FULL: an acknowledged write is on disk before the response goes out.
  database.pragma("synchronous = FULL");
  database.pragma("foreign_keys = ON");
  database.pragma("busy_timeout = 5000");
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database }) });
  return {
    db,
    dialect: "sqlite",
    ping: () => pingDb(db),
    close: () => db.destroy(),
    sqliteFile: file === ":memory:" ? undefined : file,
  };
}

async function pingDb(db: Kysely<Database>): Promise<boolean> {
  try {
    await sql`select 1`.execute(db);
    return true;
  } catch {
    return false;
  }
}

export async function ensurePgSchema(databaseUrl: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`create schema if not exists "${schema.replace(/"/g, "")}"`);
  } finally {
    await client.end();
  }
}

export async function migrateToLatest(store: Store): Promise<MigrationResultSet> {
  if (store.dialect === "sqlite") return runMigrator(store.db, undefined);
  // Instances starting together on one database take turns: a session-level advisory lock held on one connection
  // for the whole run, around the migrator's own locking.
  return store.db.connection().execute(async (conn) => {
    const schema = (await sql<{ schema: string | null }>`select current_schema() as schema`.execute(conn))
      .rows[0]?.schema;
    await sql`select pg_advisory_lock(hashtext(${`gatehouse-migrations:${schema ?? ""}`}))`.execute(conn);
    try {
      return await runMigrator(conn, schema ?? undefined);
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${`gatehouse-migrations:${schema ?? ""}`}))`.execute(conn);
    }
  });
}

async function runMigrator(db: Kysely<Database>, schema: string | undefined): Promise<MigrationResultSet> {
  // Name the schema explicitly: otherwise the migrator may see another schema's bookkeeping tables as its own.
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: "gatehouse_migrations",
    migrationLockTableName: "gatehouse_migrations_lock",
    ...(schema && { migrationTableSchema: schema }),
  });
  const result = await migrator.migrateToLatest();
  if (result.error) throw result.error;
  return result;
}
