import { Worker } from "node:worker_threads";
import { dbTraceLog } from "../lib/tracing.ts";
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from "kysely";
import type { Database } from "./types.ts";

type Reply = { id: number; error: string; code?: string } | ({ id: number } & QueryResult<unknown>);

/** The connection: statements are posted to the thread, answers come back by id. */
class ThreadConnection implements DatabaseConnection {
  readonly #worker: Worker;
  readonly #name: string;
  readonly #pending = new Map<
    number,
    { resolve: (r: QueryResult<unknown>) => void; reject: (e: Error) => void }
  >();
  readonly #exited: Promise<void>;
  #nextId = 0;
  #failure: Error | undefined;

  constructor(file: string, pragmas: string[], name: string) {
    this.#name = name;
    this.#worker = new Worker(new URL("./sqlite-thread.worker.mjs", import.meta.url), {
      workerData: { file, pragmas },
    });
    this.#worker.on("message", (reply: Reply) => {
      const p = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) this.#worker.unref();
      if ("error" in reply)
        p?.reject(Object.assign(new Error(`${name}: ${reply.error}`), { code: reply.code }));
      else p?.resolve(reply);
    });
    this.#worker.on("error", (error) => this.#failAll(new Error(`${name} thread failed: ${error.message}`)));
    this.#exited = new Promise((resolve) =>
      this.#worker.once("exit", () => {
        this.#failAll(this.#failure ?? new Error(`${name} closed`));
        resolve();
      }),
    );
    // An idle thread does not keep the process alive; one with a statement in flight does. (After the listeners:
    // adding a message listener refs the port again.)
    this.#worker.unref();
  }

  #failAll(error: Error): void {
    this.#failure = error;
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (r: QueryResult<unknown>) => void, reject });
      this.#worker.ref();
      this.#worker.postMessage({ id, sql: query.sql, parameters: query.parameters });
    });
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error(`${this.#name}: streaming is not supported`);
  }

  async close(): Promise<void> {
    if (!this.#failure) {
      this.#worker.ref();
      this.#worker.postMessage("close");
    }
    await this.#exited;
  }
}

/**
 * A connection to a SQLite file on a worker thread of its own, behind a Kysely instance. better-sqlite3 is
 * synchronous: a statement on the main connection holds the event loop until it ends, so long reads (the decision
 * log's filtered lists) and a stream of writes (its chunks) run here instead. Under WAL the thread's reads see
 * every committed write and never wait for one. The thread starts with the first query and ends with
 * `destroy()`; `name` prefixes its errors.
 */
export function openSqliteThread(file: string, pragmas: string[], name: string): Kysely<Database> {
  let connection: ThreadConnection | undefined;
  // One connection: a transaction holds it until it ends, as Kysely's own SQLite driver does.
  let held: Promise<void> | undefined;
  let release: (() => void) | undefined;
  const driver: Driver = {
    async init() {
      connection = new ThreadConnection(file, pragmas, name);
    },
    async acquireConnection() {
      while (held) await held;
      held = new Promise((resolve) => (release = resolve));
      return connection as ThreadConnection;
    },
    async releaseConnection() {
      const done = release;
      held = release = undefined;
      done?.();
    },
    async beginTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw("begin immediate"));
    },
    async commitTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw("commit"));
    },
    async rollbackTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw("rollback"));
    },
    async destroy() {
      await connection?.close();
    },
  };
  return sqliteKysely(driver);
}

/** Kysely with SQLite's query compiler over a driver of this project's own. */
export function sqliteKysely(driver: Driver): Kysely<Database> {
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => driver,
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
    ...dbTraceLog("sqlite"),
  });
}
