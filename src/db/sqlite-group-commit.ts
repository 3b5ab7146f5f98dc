import fs from "node:fs/promises";
import type Sqlite from "better-sqlite3";
import { CompiledQuery, type DatabaseConnection, type Driver, type Kysely, type QueryResult } from "kysely";
import type { Database } from "./types.ts";
import { sqliteKysely } from "./sqlite-thread.ts";

type Prepare = (sql: string) => Sqlite.Statement;

/**
 * fsync of the write-ahead log, shared: a call waits for an fsync that starts after it (one in flight may have
 * begun before its commit), and every commit made while one runs is covered by the next. On libuv's thread pool,
 * so the event loop goes on answering (and committing) meanwhile.
 */
class WalSync {
  #inFlight: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  constructor(private readonly walFile: string) {}

  sync(): Promise<void> {
    if (!this.#inFlight) {
      this.#inFlight = this.#fsync().finally(() => {
        this.#inFlight = undefined;
      });
      return this.#inFlight;
    }
    this.#next ??= this.#inFlight
      .catch(() => {})
      .then(() => {
        this.#next = undefined;
        return this.sync();
      });
    return this.#next;
  }

  async #fsync(): Promise<void> {
    // Opened each time: the WAL is the file at this path now. SQLite deletes it only when the last connection
    // closes, after checkpointing it into the database file and syncing that: nothing is left to sync then.
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.walFile, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/**
 * How long a unit of work may keep the event loop busy before its next statement (or its COMMIT) waits for the
 * loop's next turn. Every statement runs synchronously on this connection, so without these pauses a transaction
 * of a thousand statements held the loop from BEGIN to COMMIT: 100-200 ms for a bulk write of 1,000 users
 * (docs/perf/event-loop.md).
 */
export const HOLD_MS = 10;

/** What Kysely holds between acquireConnection and releaseConnection: one per unit of work. */
class Lease implements DatabaseConnection {
  holdsConnection = false;
  /** When this unit of work last let the event loop turn (or took the connection), performance.now(). */
  ranSince = 0;
  constructor(private readonly driver: GroupCommitDriver) {}
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.driver.execute(this, query) as Promise<QueryResult<R>>;
  }
  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("sqlite: streaming is not supported");
  }
}

/**
 * One SQLite connection on the main thread (as Kysely's own driver: units of work take turns on it, transactions
 * begin IMMEDIATE), with group commit. The connection runs with synchronous=NORMAL, so a COMMIT writes the WAL
 * without waiting for the disk; before a write is acknowledged (its transaction's commit, or a write outside a
 * transaction, returns) the WAL is fsynced, off the event loop and shared by every commit since the last fsync
 * (WalSync), and the connection goes to the next unit of work meanwhile. An acknowledged write is on disk, as with
 * synchronous=FULL, but concurrent writers share an fsync (0.5 to 2 ms here) and the event loop no longer stops
 * for it. Checkpoints stay synchronous (NORMAL syncs the WAL before a checkpoint and the database after it). A
 * read may see a committed write whose fsync is still in flight; its writer has not been answered yet. A long unit
 * of work pauses between its statements (HOLD_MS) so that the event loop is never held for all of it.
 */
class GroupCommitDriver implements Driver {
  #waiters: (() => void)[] = [];
  #busy = false;
  readonly #wal: WalSync;

  constructor(
    private readonly database: Sqlite.Database,
    private readonly prepare: Prepare,
    walFile: string,
    private readonly holdMs: number,
  ) {
    this.#wal = new WalSync(walFile);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const lease = new Lease(this);
    await this.#hold(lease);
    return lease;
  }

  async #hold(lease: Lease): Promise<void> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#busy = true;
    lease.holdsConnection = true;
    lease.ranSince = performance.now();
  }

  /**
   * Lets the event loop turn (timers, I/O, other requests' work that needs no database) when the unit of work has
   * run `holdMs` since it last did. It keeps the connection meanwhile: a transaction stays whole, and other units
   * of work wait for it as before.
   */
  async #pause(lease: Lease): Promise<void> {
    if (performance.now() - lease.ranSince < this.holdMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    lease.ranSince = performance.now();
  }

  #release(lease: Lease): void {
    if (!lease.holdsConnection) return;
    lease.holdsConnection = false;
    const next = this.#waiters.shift();
    // The connection passes straight to the next waiter (it stays busy).
    if (next) next();
    else this.#busy = false;
  }

  async execute(lease: Lease, query: CompiledQuery): Promise<QueryResult<unknown>> {
    // A lease let go during its last statement's fsync (below) takes its turn again for the next one.
    if (!lease.holdsConnection) await this.#hold(lease);
    else await this.#pause(lease);
    const statement = this.prepare(query.sql);
    const parameters = query.parameters as unknown[];
    // A statement that writes, outside a transaction, is acknowledged once it is on disk. One that changed no row
    // (RETURNING returns every row it changed; SQLite's triggers are per row) has nothing to wait for: the task
    // worker's claim, four times a second on an idle server, is such a statement.
    const durable = !statement.readonly && !this.database.inTransaction;
    if (statement.reader) {
      const rows = statement.all(parameters);
      if (durable && rows.length > 0) await this.#committed(lease);
      return { rows };
    }
    const { changes, lastInsertRowid } = statement.run(parameters);
    if (durable && changes > 0) await this.#committed(lease);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  /**
   * Waits for the disk after a write outside a transaction, as a commit does: without the connection, which the
   * next unit of work takes meanwhile. (Held through the fsync, it made every other request wait 0.5-2 ms behind
   * each API log batch.)
   */
  async #committed(lease: Lease): Promise<void> {
    this.#release(lease);
    await this.#wal.sync();
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const lease = connection as Lease;
    if (!lease.holdsConnection) await this.#hold(lease);
    this.database.exec("begin immediate");
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#pause(connection as Lease);
    this.database.exec("commit");
    // The next unit of work may run (and commit) while this one waits for the disk.
    await this.#committed(connection as Lease);
  }

  async rollbackTransaction(): Promise<void> {
    if (this.database.inTransaction) this.database.exec("rollback");
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.#release(connection as Lease);
  }

  async destroy(): Promise<void> {
    this.database.close();
  }
}

/**
 * Kysely over a SQLite file with group commit (see GroupCommitDriver). Sets synchronous=NORMAL on `database`, whose
 * durability the driver then provides.
 */
export function openGroupCommitSqlite(
  database: Sqlite.Database,
  prepare: Prepare,
  file: string,
  holdMs = HOLD_MS,
): Kysely<Database> {
  database.pragma("synchronous = NORMAL");
  return sqliteKysely(new GroupCommitDriver(database, prepare, `${file}-wal`, holdMs));
}
