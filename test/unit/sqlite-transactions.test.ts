import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Sqlite from "better-sqlite3";
import { sql } from "kysely";
import { openGroupCommitSqlite } from "../../src/db/sqlite-group-commit.ts";
import { freshStore } from "../helpers/stores.ts";

test("SQLite: a transaction that reads, awaits, then writes is not failed by another connection's write", async () => {
  const store = await freshStore("sqlite");
  const other = new Sqlite(store.location.sqliteFile as string);
  try {
    other.pragma("busy_timeout = 0");
    other.exec("create table scratch (n integer)");
    let meanwhile = "";
    await store.db.transaction().execute(async (trx) => {
      await sql`select count(*) from scratch`.execute(trx);
      // Another connection to the file (the decision log's writer thread does this) writes while we await.
      try {
        other.prepare("insert into scratch values (1)").run();
        meanwhile = "wrote";
      } catch (error) {
        meanwhile = (error as { code?: string }).code ?? String(error);
      }
      await sql`insert into scratch values (2)`.execute(trx);
    });
    assert.equal(meanwhile, "SQLITE_BUSY", "the transaction holds the write lock from its first statement");
    other.prepare("insert into scratch values (3)").run();
    assert.deepEqual(
      other
        .prepare("select n from scratch order by n")
        .all()
        .map((r) => (r as { n: number }).n),
      [2, 3],
    );
  } finally {
    other.close();
    await store.close();
  }
});

test("SQLite group commit: concurrent transactions share WAL fsyncs, each is answered only after one that began after its commit; a rollback undoes only its own", async (t) => {
  const store = await freshStore("sqlite");
  const events: string[] = [];
  const open = fs.open.bind(fs);
  t.mock.method(fs, "open", async (...args: Parameters<typeof fs.open>) => {
    const handle = await open(...args);
    if (String(args[0]).endsWith("-wal")) {
      events.push("fsync begins");
      const sync = handle.sync.bind(handle);
      handle.sync = async () => {
        await sync();
        events.push("fsync done");
      };
    }
    return handle;
  });
  try {
    await sql`create table scratch (n integer)`.execute(store.db);
    events.length = 0;
    const writers = Array.from({ length: 8 }, (_, i) =>
      store.db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into scratch values (${i})`.execute(trx);
          if (i === 3) throw new Error("rolled back");
          events.push(`wrote ${i}`);
        })
        .then(
          () => events.push(`answered ${i}`),
          (error: Error) => events.push(`failed ${i}: ${error.message}`),
        ),
    );
    await Promise.all(writers);
    const rows = await sql<{ n: number }>`select n from scratch order by n`.execute(store.db);
    assert.deepEqual(
      rows.rows.map((r) => r.n),
      [0, 1, 2, 4, 5, 6, 7],
    );
    assert.ok(events.includes("failed 3: rolled back"));
    const fsyncs = events.filter((e) => e === "fsync begins").length;
    assert.ok(fsyncs >= 1 && fsyncs < 7, `the 7 commits share fsyncs: ${events.join(", ")}`);
    for (const i of [0, 1, 2, 4, 5, 6, 7]) {
      const after = events.slice(events.indexOf(`wrote ${i}`), events.indexOf(`answered ${i}`));
      const begins = after.indexOf("fsync begins");
      assert.ok(
        begins >= 0 && after.indexOf("fsync done", begins) > begins,
        `writer ${i} answered after an fsync that began after its write: ${events.join(", ")}`,
      );
    }

    // a write outside a transaction is answered after an fsync too
    events.length = 0;
    await sql`insert into scratch values (9)`.execute(store.db).then(() => events.push("answered"));
    assert.deepEqual(events, ["fsync begins", "fsync done", "answered"]);

    // ... and so is one with RETURNING; one that changed no row (with RETURNING or not) waits for nothing
    for (const [statement, expected] of [
      [sql`update scratch set n = 10 where n = 9 returning n`, ["fsync begins", "fsync done", "answered"]],
      [sql`update scratch set n = 11 where n = 9 returning n`, ["answered"]],
      [sql`delete from scratch where n = 99`, ["answered"]],
    ] as const) {
      events.length = 0;
      await statement.execute(store.db).then(() => events.push("answered"));
      assert.deepEqual(events, expected, statement.compile(store.db).sql);
    }
    const left = await sql<{ n: number }>`select n from scratch where n >= 9`.execute(store.db);
    assert.deepEqual(
      left.rows.map((r) => r.n),
      [10],
    );
  } finally {
    await store.close();
  }
});

test("SQLite group commit: a write outside a transaction waits for its fsync without holding the connection", async (t) => {
  const store = await freshStore("sqlite");
  const events: string[] = [];
  const open = fs.open.bind(fs);
  // While held, an fsync of the WAL ends only when the test lets it.
  let hold = true;
  let letGo = () => {};
  t.mock.method(fs, "open", async (...args: Parameters<typeof fs.open>) => {
    const handle = await open(...args);
    if (String(args[0]).endsWith("-wal")) {
      const sync = handle.sync.bind(handle);
      handle.sync = async () => {
        events.push("fsync begins");
        await sync();
        if (hold) await new Promise<void>((resolve) => (letGo = resolve));
        events.push("fsync done");
      };
    }
    return handle;
  });
  const turns = async (n: number, until: () => boolean) => {
    for (let i = 0; i < n && !until(); i++) await new Promise((resolve) => setImmediate(resolve));
  };
  try {
    await sql`create table scratch (n integer)`.execute(store.db);
    hold = true;
    events.length = 0;
    const write = sql`insert into scratch values (1)`
      .execute(store.db)
      .then(() => events.push("write answered"));
    // Queued behind the write for the connection: a read, a transaction, and two statements on one lease.
    const read = sql<{ n: number }>`select n from scratch`.execute(store.db).then((r) => {
      events.push(`read ${r.rows.map((row) => row.n).join()}`);
    });
    const transaction = store.db
      .transaction()
      .execute((trx) => sql`update scratch set n = n + 1`.execute(trx))
      .then(() => events.push("transaction answered"));
    const leased = store.db.connection().execute(async (conn) => {
      await sql`insert into scratch values (10)`.execute(conn);
      await sql`insert into scratch values (20)`.execute(conn);
    });
    await turns(200, () => events.includes("read 1"));
    const meanwhile = [...events];
    hold = false;
    letGo();
    await Promise.all([write, read, transaction, leased]);
    assert.deepEqual(
      meanwhile.filter((e) => e !== "fsync begins"),
      ["read 1"],
      "the read ran while the write's fsync was in flight",
    );
    assert.ok(
      events.indexOf("fsync done") < events.indexOf("write answered"),
      `the write is answered after its fsync: ${events.join(", ")}`,
    );
    const rows = await sql<{ n: number }>`select n from scratch order by n`.execute(store.db);
    assert.deepEqual(
      rows.rows.map((r) => r.n),
      [2, 10, 20],
    );
  } finally {
    hold = false;
    letGo();
    await store.close();
  }
});

test("SQLite group commit: a long unit of work lets the event loop turn between its statements, and stays whole", async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gatehouse-pause-"));
  const file = path.join(dir, "pause.db");
  const database = new Sqlite(file);
  database.pragma("journal_mode = WAL");
  database.exec("create table scratch (n integer)");
  // Pausing after 0 ms pauses before every statement; after an hour, never.
  const pausing = openGroupCommitSqlite(database, (text) => database.prepare(text), file, 0);
  const steady = openGroupCommitSqlite(database, (text) => database.prepare(text), file, 3_600_000);
  const run = async (db: typeof pausing, fail = false) => {
    const events: string[] = [];
    const turned = () => {
      events.push("loop turned");
      // Queued for the connection while the transaction holds it: it sees the transaction whole or not at all.
      void sql<{ c: number }>`select count(*) as c from scratch`
        .execute(db)
        .then((r) => events.push(`count ${r.rows[0]?.c}`));
    };
    await db
      .transaction()
      .execute(async (trx) => {
        for (const n of [1, 2, 3]) {
          await sql`insert into scratch values (${n})`.execute(trx);
          events.push(`insert ${n}`);
          if (n === 1) setImmediate(turned);
        }
        if (fail) throw new Error("rolled back");
      })
      .catch((error: Error) => events.push(error.message));
    await new Promise((resolve) => setTimeout(resolve, 50));
    return events;
  };
  try {
    assert.deepEqual(await run(steady), ["insert 1", "insert 2", "insert 3", "loop turned", "count 3"]);
    database.exec("delete from scratch");
    assert.deepEqual(await run(pausing), ["insert 1", "loop turned", "insert 2", "insert 3", "count 3"]);
    database.exec("delete from scratch");
    assert.deepEqual(await run(pausing, true), [
      "insert 1",
      "loop turned",
      "insert 2",
      "insert 3",
      "rolled back",
      "count 0",
    ]);
  } finally {
    database.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
});
