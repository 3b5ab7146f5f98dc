import fs from "node:fs";
import { dbTraceLog } from "../lib/tracing.ts";
import path from "node:path";
import Sqlite from "better-sqlite3";
import pg from "pg";
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type Migration,
} from "kysely";
import type { Database } from "./types.ts";
import { migrations } from "./migrations/index.ts";
import { DatabaseOutage } from "./outage.ts";
import { openGroupCommitSqlite } from "./sqlite-group-commit.ts";

export type Dialect = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The SQLite file (undefined for PostgreSQL and in-memory databases). */
  sqliteFile: string | undefined;
  /** How to open a connection of its own to the same PostgreSQL database and schema (undefined for SQLite). */
  pgClientConfig: pg.ClientConfig | undefined;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  /** The PostgreSQL pool's connections and waiting queries (undefined for SQLite, one connection). */
  poolStats(): { total: number; idle: number; waiting: number } | undefined;
  /** Tells "the database is unavailable" errors from others and logs each outage once. */
  outage: DatabaseOutage;
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

/**
 * Kysely's SQLite driver prepares every statement it runs anew; preparing took 28% of the server's CPU during a
 * bulk import (docs/perf/writes-and-imports.md). The statements come from a fixed set of queries, so each is prepared once and
 * kept (a bound keeps a stray one from growing the map for ever; the oldest goes first). Nothing streams, so no
 * kept statement is ever busy when it is run again.
 */
function cachedPrepare(database: Sqlite.Database, limit = 1000): (sql: string) => Sqlite.Statement {
  const statements = new Map<string, Sqlite.Statement>();
  return (sql) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = database.prepare(sql);
      if (statements.size >= limit) statements.delete(statements.keys().next().value as string);
      statements.set(sql, statement);
    }
    return statement;
  };
}

function openSqliteFile(file: string): Sqlite.Database {
  const database = new Sqlite(file);
  database.pragma("journal_mode = WAL");
  // FULL: an acknowledged write is on disk before the response goes out.
  database.pragma("synchronous = FULL");
  database.pragma("foreign_keys = ON");
  database.pragma("busy_timeout = 5000");
  return database;
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
    const pgClientConfig: pg.ClientConfig = {
      connectionString: options.databaseUrl,
      // A server that cannot be reached (or a pool that stays busy) fails the request after this, as 503,
      // rather than holding it until the operating system gives up on the connection.
      connectionTimeoutMillis: 10_000,
      types: pgTypes,
      ...(options.pgSchema ? { options: `-c search_path=${options.pgSchema}` } : {}),
    };
    const pool = new pg.Pool({ ...pgClientConfig, max: options.pgPoolSize ?? 10 });
    // A client that loses its server must not crash the process, idle (the pool's "error") or checked out
    // between two queries (pg-pool listens only to idle ones): the next query on it reports the problem, and
    // the pool discards it when it is released.
    pool.on("error", () => {});
    pool.on("connect", (client) => client.on("error", () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), ...dbTraceLog("postgresql") });
    const ping = () => pingDb(db);
    const outage = new DatabaseOutage(ping);
    return {
      db,
      dialect: "postgres",
      ping,
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      outage,
      async close() {
        outage.close();
        await db.destroy();
      },
      sqliteFile: undefined,
      pgClientConfig,
    };
  }
  const file = options.sqliteFile ?? ":memory:";
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  const database = openSqliteFile(file);
  let db: Kysely<Database>;
  if (file === ":memory:") {
    // Nothing to make durable: Kysely's driver, statements prepared once.
    const prepare = cachedPrepare(database);
    db = new Kysely<Database>({
      dialect: new ImmediateSqliteDialect({ database: { close: () => database.close(), prepare } }),
    });
  } else {
    db = openGroupCommitSqlite(database, cachedPrepare(database), file);
  }
  const ping = () => pingDb(db);
  const outage = new DatabaseOutage(ping);
  return {
    db,
    dialect: "sqlite",
    ping,
    poolStats: () => undefined,
    outage,
    async close() {
      outage.close();
      await db.destroy();
    },
    sqliteFile: file === ":memory:" ? undefined : file,
    pgClientConfig: undefined,
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

const MIGRATIONS_TABLE = "gatehouse_migrations";

/**
 * Applies, in name order, the migrations not yet recorded in `gatehouse_migrations`, each in its own transaction
 * with its record, so a crash leaves every migration whole or absent. Returns the names applied.
 *
 * Not Kysely's Migrator: to find its bookkeeping tables it introspects every table of the database, and on
 * PostgreSQL that introspection fails when another schema drops a table meanwhile (`relation "x.y" does not
 * exist`); on SQLite it runs migrations outside transactions.
 */
export async function migrateToLatest(
  store: Store,
  list: Record<string, Migration> = migrations,
): Promise<string[]> {
  if (store.dialect === "sqlite") return applyMigrations(store.db, list);
  // Instances starting together on one database take turns: a session-level advisory lock, per schema, held on
  // one connection for the whole run.
  return store.db.connection().execute(async (conn) => {
    const lock = sql`hashtext('gatehouse-migrations:' || coalesce(current_schema(), ''))`;
    await sql`select pg_advisory_lock(${lock})`.execute(conn);
    try {
      return await applyMigrations(conn, list);
    } finally {
      await sql`select pg_advisory_unlock(${lock})`.execute(conn);
    }
  });
}

async function applyMigrations(db: Kysely<Database>, list: Record<string, Migration>): Promise<string[]> {
  const table = sql.table(MIGRATIONS_TABLE);
  // The columns Kysely's Migrator used, so databases it migrated carry on.
  await sql`create table if not exists ${table} (name varchar(255) not null primary key,
    timestamp varchar(255) not null)`.execute(db);
  const recorded = new Set(
    (await sql<{ name: string }>`select name from ${table}`.execute(db)).rows.map((r) => r.name),
  );
  const unknown = [...recorded].filter((name) => !Object.hasOwn(list, name));
  if (unknown.length > 0) {
    throw new Error(
      `the database has migrations this version of Gatehouse does not know (${unknown.join(", ")}); ` +
        "run the version that applied them, or a newer one",
    );
  }
  const applied: string[] = [];
  for (const [name, migration] of Object.entries(list).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (recorded.has(name)) continue;
    const ran = await db.transaction().execute(async (trx) => {
      // Another process on the same SQLite file may have applied it since the list was read.
      const done = await sql`select 1 from ${table} where name = ${name}`.execute(trx);
      if (done.rows.length > 0) return false;
      await migration.up(trx);
      await sql`insert into ${table} (name, timestamp) values (${name}, ${new Date().toISOString()})`.execute(
        trx,
      );
      return true;
    });
    if (ran) applied.push(name);
  }
  return applied;
}
