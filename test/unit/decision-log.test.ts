import { test } from "node:test";
import assert from "node:assert/strict";
import {
  createDecisionLogger,
  type DecisionLogEntry,
  type DecisionRecord,
  type DecisionSource,
} from "../../src/pdp/decision-log.ts";
import { createSqliteDecisionLogWriter } from "../../src/modules/audit-logs/decision-log-writer.ts";
import { insertDecisionLogs, listDecisionLogs } from "../../src/modules/audit-logs/audit-logs.repo.ts";
import { toTimestamp } from "../../src/lib/time.ts";
import { createTestEnv, describeEachDialect, type TestEnv } from "../helpers/app.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const record = (i: number): DecisionRecord => ({
  query: "check",
  user_key: `user "${i}" \u00e9\u{1F600}`,
  action: "read",
  resource_type: "document",
  resource_key: i % 2 === 0 ? `doc-${i}` : null,
  tenant: "t1",
  decision: i % 3 === 0 ? null : i % 3 === 1,
  reason: i % 2 === 0 ? { kind: "rbac", role: "viewer", tenant: "t1" } : null,
  input:
    i % 4 === 0
      ? "a bare string"
      : i % 4 === 1
        ? null
        : { user: { key: `u${i}` }, action: "read", context: { n: [1, null, "x"] } },
  result: null,
  revision: 7 + i,
  latency_us: i,
});

const source: DecisionSource = { environmentId: "e" };

test("decision logger: entries are encoded once, stamped with a time-ordered id, shipped in bounded batches", async () => {
  const batches: { entries: DecisionLogEntry[]; count: number }[] = [];
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (batch, count) => void batches.push({ entries: JSON.parse(batch), count }),
    maxBatch: 4,
    flushIntervalMs: 60_000,
  });
  const input = { user: { key: "u0" }, action: "read" };
  logger.record(source, { ...record(1), input });
  input.action = "changed after recording";
  const other: DecisionSource = { environmentId: "e2" };
  for (let i = 2; i <= 10; i++) logger.record(i === 5 ? other : source, record(i));
  await logger.close();
  assert.deepEqual(
    batches.map((b) => [b.count, b.entries.length]),
    [
      [4, 4],
      [4, 4],
      [2, 2],
    ],
  );
  const entries = batches.flatMap((b) => b.entries);
  assert.equal((entries[0]?.input as { action: string }).action, "read", "encoded when recorded");
  assert.deepEqual(
    entries.map((e) => e.latency_us),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  for (const e of entries) {
    assert.match(e.id, UUID_RE);
    assert.equal(
      e.timestamp,
      toTimestamp(new Date(Date.parse(e.timestamp))),
      "written as toTimestamp writes it",
    );
  }
  const sorted = [...entries].map((e) => e.id).sort();
  assert.deepEqual(
    sorted,
    entries.map((e) => e.id),
    "ids are in recording order",
  );
  const bound = (s: DecisionSource) => ({ environment_id: s.environmentId, pdp_id: "pdp-1" });
  assert.deepEqual(entries[3], {
    id: entries[3]?.id,
    timestamp: entries[3]?.timestamp,
    ...bound(source),
    ...record(4),
  });
  assert.deepEqual(entries[4], {
    id: entries[4]?.id,
    timestamp: entries[4]?.timestamp,
    ...bound(other),
    ...record(5),
  });
});

test("decision logger: a drain ships what was queued when it began; a later flush() covers the rest", async () => {
  const delivered: number[] = [];
  let release: () => void = () => {};
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (batch) => {
      await new Promise<void>((resolve) => (release = resolve));
      delivered.push(...(JSON.parse(batch) as DecisionLogEntry[]).map((e) => e.latency_us));
    },
    flushIntervalMs: 60_000,
  });
  logger.record(source, record(1));
  const first = logger.flush();
  await new Promise((r) => setImmediate(r));
  logger.record(source, record(2));
  const second = logger.flush();
  release();
  await first;
  assert.deepEqual(delivered, [1], "the entry recorded during the first drain waits for the next");
  await new Promise((r) => setImmediate(r));
  release();
  await second;
  assert.deepEqual(delivered, [1, 2]);
  await logger.close();
});

test("decision logger: a failing sink is retried, then its batch is dropped and counted; the queue is bounded", async () => {
  let failuresLeft = 2;
  const delivered: number[] = [];
  const retrying = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (_batch, count) => {
      if (failuresLeft-- > 0) throw new Error("down");
      delivered.push(count);
    },
    flushIntervalMs: 60_000,
  });
  retrying.record(source, record(1));
  await retrying.flush();
  await retrying.flush();
  assert.deepEqual(delivered, []);
  await retrying.flush();
  assert.deepEqual(delivered, [1], "delivered once the sink came back");
  assert.equal(retrying.dropped, 0);

  const errors: unknown[] = [];
  const dead = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async () => {
      throw new Error("down for good");
    },
    maxQueue: 3,
    flushIntervalMs: 60_000,
    onError: (e) => errors.push(e),
  });
  for (let i = 0; i < 5; i++) dead.record(source, record(i));
  assert.equal(dead.dropped, 2, "past maxQueue new entries are dropped");
  for (let i = 0; i < 5; i++) await dead.flush();
  assert.equal(dead.dropped, 5, "after five failures in a row the batch is given up");
  assert.equal(errors.length, 5);
  await dead.close();
});

const target = (env: TestEnv): DecisionSource => ({ environmentId: env.acme.envs.production });

/** What the logger hands its sink for records `from` to `to - 1`. */
async function encoded(env: TestEnv, from: number, to: number): Promise<string> {
  let text = "";
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (batch) => void (text = batch),
    flushIntervalMs: 60_000,
  });
  for (let i = from; i < to; i++) logger.record(target(env), record(i));
  await logger.close();
  return text;
}

const stored = async (env: TestEnv) =>
  (await listDecisionLogs(env.store.db, target(env).environmentId, {}, 0, 1000)).rows.sort(
    (a, b) => a.latency_us - b.latency_us,
  );

describeEachDialect("decision log storage", (env) => {
  test("a JSON batch goes in through the database's JSON functions, every value as recorded", async () => {
    await insertDecisionLogs(env().store.db, env().dialect, await encoded(env(), 0, 12));
    const rows = await stored(env());
    assert.equal(rows.length, 12);
    for (const [i, row] of rows.entries()) {
      const r = record(i);
      assert.equal(row.user_key, r.user_key);
      assert.equal(row.resource_key, r.resource_key);
      assert.equal(row.decision, r.decision === null ? null : r.decision ? 1 : 0);
      assert.deepEqual(row.reason === null ? null : JSON.parse(row.reason), r.reason);
      assert.deepEqual(row.input === null ? null : JSON.parse(row.input), r.input);
      assert.equal(row.result, null);
      assert.equal(Number(row.revision), r.revision);
      assert.equal(row.environment_id, target(env()).environmentId);
      assert.deepEqual([row.organization_id, row.project_id], [env().acme.id, env().acme.projectId]);
      assert.equal(row.pdp_id, "pdp-1");
      assert.ok(row.created_at >= row.timestamp.slice(0, 19));
    }
  });

  test("entries of an environment that no longer exists are left out, the rest of the batch goes in", async () => {
    const before = (await stored(env())).length;
    const batch = JSON.parse(await encoded(env(), 200, 204)) as DecisionLogEntry[];
    (batch[1] as DecisionLogEntry).environment_id = "00000000-0000-7000-8000-000000000000";
    await insertDecisionLogs(env().store.db, env().dialect, JSON.stringify(batch));
    assert.deepEqual(
      (await stored(env())).slice(before).map((r) => r.latency_us),
      [200, 202, 203],
    );
  });
});

test("SQLite writer thread: inserts what the logger encoded, skips deleted environments, reports errors", async () => {
  const env = await createTestEnv("sqlite");
  try {
    const writer = createSqliteDecisionLogWriter(env.store.location.sqliteFile as string);
    const batch = await encoded(env, 100, 150);
    assert.equal(await writer.write(batch), 50);
    const rows = await stored(env);
    assert.equal(rows.length, 50, "visible to the main connection");
    for (const [i, row] of rows.entries()) {
      const r = record(100 + i);
      assert.equal(row.user_key, r.user_key);
      assert.equal(row.decision, r.decision === null ? null : r.decision ? 1 : 0);
      assert.deepEqual(row.reason === null ? null : JSON.parse(row.reason), r.reason);
      assert.deepEqual(row.input === null ? null : JSON.parse(row.input), r.input);
      assert.equal(row.result, null);
      assert.deepEqual([row.organization_id, row.project_id], [env.acme.id, env.acme.projectId]);
    }
    const orphan = (JSON.parse(await encoded(env, 150, 152)) as DecisionLogEntry[]).map((e, i) =>
      i === 0 ? { ...e, environment_id: "00000000-0000-7000-8000-000000000000" } : e,
    );
    assert.equal(
      await writer.write(JSON.stringify(orphan)),
      1,
      "the deleted environment's entry is left out",
    );
    await assert.rejects(writer.write("not json"), /decision log writer: .*JSON/);
    await assert.rejects(writer.write(batch), /UNIQUE constraint/);
    assert.equal((await stored(env)).length, 51, "a failed batch inserts nothing");
    await writer.close();
    await assert.rejects(writer.write("[]"), /closed/);
  } finally {
    await env.app.close();
    await env.store.close();
  }
});
