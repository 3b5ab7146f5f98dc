import { test } from "node:test";
import assert from "node:assert/strict";
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
