import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { sql } from "kysely";
import { DIALECTS, freshStore, type TestStore } from "../helpers/stores.ts";
import {
  createApiLogWriter,
  purgeExpired,
  toLogRow,
  type CapturedCall,
} from "../../src/domain/api-log-writer.ts";
import { purgeBefore } from "../../src/domain/api-log.repo.ts";
import { buildTestApp } from "../helpers/app.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { newId } from "../../src/lib/ids.ts";
import { now, toTimestamp } from "../../src/lib/time.ts";

const call = (path: string): CapturedCall => ({
  id: newId(),
  requestId: newId(),
  timestamp: now(),
  method: "GET",
  url: path,
  status: 200,
  durationMs: 1.5,
  clientIp: "127.0.0.1",
  principal: null,
  projectRef: undefined,
  envRef: undefined,
  requestBody: undefined,
  responseBody: null,
  bearer: undefined,
});

function recorder() {
  const lines: { level: "warn" | "error"; msg: string; obj: Record<string, unknown> }[] = [];
  return {
    lines,
    warn: (obj: object, msg: string) =>
      void lines.push({ level: "warn", msg, obj: obj as Record<string, unknown> }),
    error: (obj: object, msg: string) =>
      void lines.push({ level: "error", msg, obj: obj as Record<string, unknown> }),
  };
}

for (const { dialect, skip } of DIALECTS) {
  describe(`API log writer and retention [${dialect}]`, { skip }, () => {
    let store: TestStore;
    before(async () => {
      store = await freshStore(dialect);
    });
    after(async () => store.close());

    const paths = async () =>
      (await store.db.selectFrom("api_log").select("path").execute()).map((r) => r.path).sort();
    const hideTable = () => sql`alter table api_log rename to api_log_away`.execute(store.db);
    const restoreTable = () => sql`alter table api_log_away rename to api_log`.execute(store.db);

    test("a call whose request resolved its path is recorded under those rows, without looking them up again", async () => {
      const writer = createApiLogWriter({
        db: store.db,
        log: recorder(),
        flushIntervalMs: 10,
        maxBodyBytes: 1000,
      });
      // Rows that exist nowhere in this database: had the writer looked the refs up, the fields would be empty.
      const project = { id: newId(), key: "billing" };
      const environment = { id: newId(), key: "staging" };
      writer.enqueue({
        ...call("/v2/resolved"),
        principal: {
          keyId: newId(),
          keyName: "org key",
          organizationId: newId(),
          projectId: null,
          projectKey: null,
          environmentId: null,
          environmentKey: null,
          level: "org",
          access: "write",
        },
        projectRef: "billing",
        envRef: "staging",
        resolved: { project, environment },
      });
      await writer.close();
      const row = await store.db
        .selectFrom("api_log")
        .select(["project_id", "project_key", "environment_id", "environment_key"])
        .where("path", "=", "/v2/resolved")
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, {
        project_id: project.id,
        project_key: "billing",
        environment_id: environment.id,
        environment_key: "staging",
      });
      await store.db.deleteFrom("api_log").execute();
    });

    test("a failed write is retried; the records arrive once the database takes them", async () => {
      const log = recorder();
      const writer = createApiLogWriter({ db: store.db, log, flushIntervalMs: 10, maxBodyBytes: 1000 });
      await hideTable();
      writer.enqueue(call("/v2/retried-1"));
      writer.enqueue(call("/v2/retried-2"));
      for (const deadline = Date.now() + 30_000; !log.lines.some((l) => l.msg.includes("will retry"));) {
        assert.ok(Date.now() < deadline, "the failed write was never retried");
        await new Promise((r) => setTimeout(r, 5));
      }
      await restoreTable();
      await writer.close();
      assert.deepEqual(await paths(), ["/v2/retried-1", "/v2/retried-2"]);
      assert.ok(!log.lines.some((l) => l.level === "error"));
      await store.db.deleteFrom("api_log").execute();
    });

    test("a batch that keeps failing is dropped after the last attempt with an error line; the writer goes on", async () => {
      const log = recorder();
      const writer = createApiLogWriter({
        db: store.db,
        log,
        flushIntervalMs: 10,
        maxBodyBytes: 1000,
        maxAttempts: 2,
      });
      await hideTable();
      writer.enqueue(call("/v2/lost-1"));
      writer.enqueue(call("/v2/lost-2"));
      for (const deadline = Date.now() + 30_000; !log.lines.some((l) => l.level === "error");) {
        assert.ok(Date.now() < deadline, "the failing batch was never given up");
        await new Promise((r) => setTimeout(r, 5));
      }
      await restoreTable();
      const dropped = log.lines.filter((l) => l.level === "error");
      assert.equal(dropped.length, 1);
      assert.equal(dropped[0]!.obj["dropped"], 2);
      writer.enqueue(call("/v2/after"));
      await writer.close();
      assert.deepEqual(await paths(), ["/v2/after"]);
      await store.db.deleteFrom("api_log").execute();
    });

    test("the queue is bounded: past it new records are dropped and said so, and enqueue never throws", async () => {
      const log = recorder();
      const writer = createApiLogWriter({
        db: store.db,
        log,
        flushIntervalMs: 60_000,
        maxBodyBytes: 1000,
        maxQueue: 3,
      });
      for (let i = 0; i < 5; i++) writer.enqueue(call(`/v2/q-${i}`));
      await writer.close();
      assert.deepEqual(await paths(), ["/v2/q-0", "/v2/q-1", "/v2/q-2"]);
      assert.ok(log.lines.some((l) => l.level === "error" && l.msg.includes("queue full")));
      await store.db.deleteFrom("api_log").execute();
    });

    test("retention: records older than the retention are purged, in chunks; 0 keeps everything", async () => {
      const day = 86_400_000;
      const at = Date.parse("2030-06-30T12:00:00Z");
      const aged = (path: string, daysAgo: number) =>
        toLogRow(
          { ...call(path), timestamp: toTimestamp(new Date(at - daysAgo * day)) },
          { project: null, environment: null },
          1000,
        );
      await store.db
        .insertInto("api_log")
        .values([
          aged("/v2/new", 1),
          aged("/v2/edge", 29.9),
          ...[1, 2, 3, 4, 5].map((i) => aged(`/v2/old-${i}`, 31 + i)),
        ])
        .execute();
      assert.equal(await purgeExpired(store.db, 0, at), 0);
      assert.equal((await paths()).length, 7);
      assert.equal(await purgeBefore(store.db, toTimestamp(new Date(at - 30 * day)), 2), 5);
      assert.deepEqual(await paths(), ["/v2/edge", "/v2/new"]);
      assert.equal(await purgeExpired(store.db, 1, at), 1);
      assert.deepEqual(await paths(), ["/v2/new"]);
      await store.db.deleteFrom("api_log").execute();
    });

    test("retention: the server purges once at start", async () => {
      await store.db
        .insertInto("api_log")
        .values([
          toLogRow(
            { ...call("/v2/ancient"), timestamp: "2001-01-01T00:00:00.000+00:00" },
            { project: null, environment: null },
            1000,
          ),
          toLogRow(call("/v2/today"), { project: null, environment: null }, 1000),
        ])
        .execute();
      const app = await buildTestApp(store, createSecretBox("test-secret-key-that-is-long-enough-000"));
      await app.close(); // waits for the purge that started with the app
      assert.deepEqual(await paths(), ["/v2/today"]);
      await store.db.deleteFrom("api_log").execute();
    });

    test("a full batch is written without waiting for the timer", async () => {
      const writer = createApiLogWriter({
        db: store.db,
        log: recorder(),
        flushIntervalMs: 60_000,
        maxBodyBytes: 1000,
        batchSize: 4,
      });
      for (let i = 0; i < 4; i++) writer.enqueue(call(`/v2/b-${i}`));
      const deadline = Date.now() + 30_000; // far below the 60 s timer
      while ((await paths()).length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.equal((await paths()).length, 4);
      await writer.close();
      await store.db.deleteFrom("api_log").execute();
    });
  });
}
