import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import Sqlite from "better-sqlite3";
import { sql } from "kysely";
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
