import { describe, test } from "node:test";
import assert from "node:assert/strict";
import Sqlite from "better-sqlite3";
import { sql } from "kysely";
import { openStore, type Store } from "../../src/db/store.ts";
import { isDatabaseUnavailable, isTransactionConflict } from "../../src/db/errors.ts";
import { errorAnswer, toAppError } from "../../src/http/errors.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { buildTestApp } from "../helpers/app.ts";
import { DIALECTS, freshStore, type TestStore } from "../helpers/stores.ts";
import { pgRelay } from "../helpers/pg-relay.ts";
import pino from "pino";

const silentLog = pino({ level: "silent" });

/** The database made unavailable for real, and given back: PostgreSQL behind a cut relay, SQLite locked by another connection. */
interface Outage {
  store: Store;
  direct: TestStore;
  begin(): Promise<void>;
  end(): Promise<void>;
  close(): Promise<void>;
}

async function outageOf(dialect: "sqlite" | "postgres"): Promise<Outage> {
  const direct = await freshStore(dialect);
  if (dialect === "sqlite") {
    const file = direct.location.sqliteFile as string;
    // The app's own connection waits 100 ms for the write lock, not 5 s.
    await sql`pragma busy_timeout = 100`.execute(direct.db);
    const other = new Sqlite(file);
    return {
      store: direct,
      direct,
      async begin() {
        other.exec("begin immediate");
      },
      async end() {
        other.exec("rollback");
      },
      async close() {
        other.close();
        await direct.close();
      },
    };
  }
  const relay = await pgRelay();
  const store = openStore({
    databaseUrl: relay.url,
    pgSchema: direct.location.pgSchema as string,
    pgPoolSize: 4,
  });
  return {
    store,
    direct,
    begin: relay.cut,
    end: relay.mend,
    async close() {
      await store.close();
      await relay.close();
      await direct.close();
    },
  };
}

for (const { dialect, skip } of DIALECTS) {
  describe(`database outage [${dialect}]`, { skip }, () => {
    test("API calls get 503 SERVICE_UNAVAILABLE with Retry-After while the database is unavailable, and work again after, without a restart", async () => {
      const outage = await outageOf(dialect);
      const box = createSecretBox("test-secret-key-that-is-long-enough-000");
      const org = await createOrganizationRecords(outage.direct.db, box, { key: "acme", name: "Acme" });
      const otherOrg = await createOrganizationRecords(outage.direct.db, box, {
        key: "globex",
        name: "Globex",
      });
      const app = await buildTestApp(outage.store, box);
      const call = (key: string, method: "GET" | "POST", url: string, body?: object) =>
        app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${key}` },
          ...(body && { payload: body }),
        });
      try {
        assert.equal((await call(org.adminKeySecret, "GET", "/v2/projects")).statusCode, 200);
        await outage.begin();
        const write = await call(org.adminKeySecret, "POST", "/v2/facts/default/production/users", {
          key: "during",
        });
        assert.equal(write.statusCode, 503, write.body);
        assert.equal(write.headers["retry-after"], "5");
        const body = write.json();
        assert.equal(body.error_code, "SERVICE_UNAVAILABLE");
        for (const field of ["id", "title", "message", "support_link"])
          assert.equal(typeof body[field], "string");
        assert.doesNotMatch(write.body, /ECONNREFUSED|SQLITE|busy|terminated|at .*\.ts:\d+/i);
        if (dialect === "postgres") {
          // Reads need the database too (the key itself is looked up).
          const read = await call(otherOrg.adminKeySecret, "GET", "/v2/projects");
          assert.equal(read.statusCode, 503);
          assert.equal((await app.inject({ url: "/readyz" })).statusCode, 503);
        }
        assert.ok(outage.store.outage.down, "the outage is known (and was logged once)");
        await outage.end();

        const after = await call(org.adminKeySecret, "POST", "/v2/facts/default/production/users", {
          key: "after",
        });
        assert.equal(after.statusCode, 201, after.body);
        const users = await call(org.adminKeySecret, "GET", "/v2/facts/default/production/users");
        assert.deepEqual(
          users.json().data.map((u: { key: string }) => u.key),
          ["after"],
          "the write that got 503 did nothing",
        );
        // The refused calls are in their organization's API log, also those whose key could not be looked up.
        await app.apiLog.flush();
        const refused = async (key: string, path: string) =>
          (await call(key, "GET", `/v2/history?status_code=503&per_page=100`))
            .json()
            .data.filter((e: { path: string }) => e.path === path).length;
        assert.equal(await refused(org.adminKeySecret, "/v2/facts/default/production/users"), 1);
        if (dialect === "postgres") assert.equal(await refused(otherOrg.adminKeySecret, "/v2/projects"), 1);
      } finally {
        await app.close();
        await outage.close();
      }
    });

    test("an outage is logged once however many errors it brings, its end once, and the next outage again", async () => {
      const outage = await outageOf(dialect);
      const lines: string[] = [];
      const log = {
        warn: (fields: object, message: string) => lines.push(`warn ${message} ${JSON.stringify(fields)}`),
        info: (fields: object, message: string) => lines.push(`info ${message} ${JSON.stringify(fields)}`),
      };
      const failing = () =>
        (dialect === "postgres"
          ? sql`select 1`.execute(outage.store.db)
          : sql`insert into organizations (id) values ('x')`.execute(outage.store.db)
        ).then(
          () => assert.fail("the database answered"),
          (e: unknown) => e,
        );
      const waitFor = async (what: () => boolean) => {
        const deadline = Date.now() + 10_000;
        while (!what()) {
          assert.ok(Date.now() < deadline, lines.join("\n"));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      try {
        for (let round = 1; round <= 2; round++) {
          await outage.begin();
          for (let i = 0; i < 5; i++) assert.equal(outage.store.outage.report(await failing(), log), true);
          assert.equal(lines.filter((l) => l.startsWith("warn")).length, round, lines.join("\n"));
          assert.doesNotMatch(lines.join("\n"), /stack|at .*\.ts:\d+/);
          await outage.end();
          await waitFor(() => !outage.store.outage.down);
          assert.equal(lines.filter((l) => l.includes("database available again")).length, round);
        }
        assert.equal(outage.store.outage.report(new Error("a bug"), log), false);
        assert.equal(lines.length, 4);
      } finally {
        await outage.close();
      }
    });

    if (dialect === "postgres") {
      test("a deadlock between two writers is 503 with Retry-After to the one PostgreSQL rolled back, not a 500", async () => {
        const store = await freshStore(dialect);
        try {
          await sql`create table locks (id int primary key)`.execute(store.db);
          await sql`insert into locks values (1), (2)`.execute(store.db);
          let firstLocked!: () => void;
          const locked = new Promise<void>((resolve) => (firstLocked = resolve));
          const writer = (mine: number, theirs: number, signal: boolean) =>
            store.db
              .transaction()
              .execute(async (trx) => {
                await sql`update locks set id = id where id = ${mine}`.execute(trx);
                if (signal) firstLocked();
                else await locked;
                await sql`select pg_sleep(0.2)`.execute(trx);
                await sql`update locks set id = id where id = ${theirs}`.execute(trx);
              })
              .then(
                () => undefined,
                (e: unknown) => e,
              );
          const outcomes = await Promise.all([writer(1, 2, true), writer(2, 1, false)]);
          const failed = outcomes.filter((e) => e !== undefined);
          assert.equal(failed.length, 1, "PostgreSQL rolls one of the two back");
          assert.equal(isTransactionConflict(failed[0]), true, String(failed[0]));
          assert.equal(isDatabaseUnavailable(failed[0]), false, "not an outage: nothing to log as one");
          const answer = errorAnswer(failed[0], { publicUrl: "http://x" }, silentLog);
          assert.equal(answer.status, 503);
          assert.equal(answer.headers["retry-after"], "5");
          assert.match(answer.body.message, /concurrent write/);
          assert.doesNotMatch(JSON.stringify(answer.body), /deadlock detected|locks|Process \d+/);
        } finally {
          await store.close();
        }
      });
    }

    test("only unavailability is 503: a bad query or a constraint violation of the same database stays what it was", async () => {
      const outage = await outageOf(dialect);
      try {
        const bad = await sql`select * from no_such_table`.execute(outage.store.db).catch((e: unknown) => e);
        assert.equal(isDatabaseUnavailable(bad), false);
        assert.equal(toAppError(bad).code, "UNEXPECTED_ERROR");
        const box = createSecretBox("test-secret-key-that-is-long-enough-000");
        await createOrganizationRecords(outage.store.db, box, { key: "twice", name: "Twice" });
        const dup = await createOrganizationRecords(outage.store.db, box, {
          key: "twice",
          name: "Twice",
        }).catch((e: unknown) => e);
        assert.equal(isDatabaseUnavailable(dup), false);
        await outage.begin();
        const away = await sql`select 1`.execute(outage.store.db).catch((e: unknown) => e);
        if (dialect === "postgres") {
          assert.ok(away instanceof Error, "a query through the cut relay fails");
          assert.equal(isDatabaseUnavailable(away), true, String(away));
          assert.equal(toAppError(away).code, "SERVICE_UNAVAILABLE");
        } else {
          // SQLite readers are not blocked by a writer; a write waits for the lock and gives up.
          const busy = await sql`insert into organizations (id) values ('x')`
            .execute(outage.store.db)
            .catch((e: unknown) => e);
          assert.equal(isDatabaseUnavailable(busy), true, String(busy));
        }
        await outage.end();
      } finally {
        await outage.close();
      }
    });
  });
}
