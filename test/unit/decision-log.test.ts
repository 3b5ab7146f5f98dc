import { mock, test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { sql } from "kysely";
import {
  createDecisionLogger,
  type DecisionLoggerOptions,
  type DecisionRecord,
  type DecisionSource,
} from "../../src/pdp/runtime/decision-log.ts";
import type { DecisionLogChunk, DecisionLogEntry, DecisionQuery } from "../../src/pdp/storage.ts";
import {
  openSqliteDecisionLogWriter,
  openSqliteDecisionLogReader,
} from "../../src/domain/decision-log/sqlite-threads.ts";
import { insertDecisionLogChunk } from "../../src/domain/decision-log/database-sink.ts";
import {
  findDecisionLog,
  idAt,
  timeOfId,
  listDecisionLogs,
  purgeDecisionLogs,
  type DecisionLogFilter,
} from "../../src/modules/decision-log/decision-log.repo.ts";
import { up as createOldTable } from "../../src/db/migrations/0007_decision_log.ts";
import { up as dropOldTimeIndex } from "../../src/db/migrations/0008_decision_log_time_index.ts";
import { migrateToLatest } from "../../src/db/store.ts";
import { now, toTimestamp } from "../../src/lib/time.ts";
import { createTestEnv, describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { createEngine, type Reason } from "../../src/pdp/engine/index.ts";
import { allQueries, fixture } from "../pdp/engine-fixture.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const GONE = "00000000-0000-7000-8000-000000000000";

const record = (i: number): DecisionRecord => ({
  query: i % 5 === 4 ? "get_user_permissions" : "check",
  user_key: `user "${i % 4}" \u00e9\u{1F600}`,
  action: i % 2 === 0 ? "read" : "write",
  resource_type: i % 3 === 0 ? "document" : "folder",
  resource_key: i % 2 === 0 ? `doc-${i}` : undefined,
  tenant: `t${i % 2}`,
  decision: i % 5 === 4 ? undefined : i % 3 === 1,
  reason: i % 2 === 0 ? { kind: "rbac", role: "viewer", tenant: "t1" } : undefined,
  input:
    i % 4 === 0
      ? "a bare string"
      : i % 4 === 1
        ? undefined
        : { user: { key: `u${i}` }, action: "read", context: { n: [1, null, "x"] } },
  revision: 7 + i,
  latency_us: i,
});

const source: DecisionSource = { environmentId: "e" };
const text = (chunk: DecisionLogChunk) => new TextDecoder().decode(chunk.entries);
const NULLS = {
  user_key: null,
  action: null,
  resource_type: null,
  resource_key: null,
  tenant: null,
  decision: null,
  reason: null,
  input: null,
  result: null,
};
/** An entry as the log reads it back: every field, null where the record left it out, its time the id's. */
const readBack = (e: { id: string } & DecisionRecord, pdpId: string): DecisionLogEntry => ({
  ...NULLS,
  ...(JSON.parse(JSON.stringify(e)) as DecisionRecord),
  id: e.id,
  timestamp: toTimestamp(new Date(timeOfId(e.id))),
  pdp_id: pdpId,
});
type Stored = { id: string } & DecisionRecord;
/** A chunk's decisions: its entries, a bulk entry's checks each with the bulk's query and revision. */
const parse = (chunk: DecisionLogChunk) =>
  (JSON.parse(text(chunk)) as (Stored | { query: DecisionQuery; revision: number; bulk: Stored[] })[])
    .flatMap((e) => ("bulk" in e ? e.bulk.map((c) => ({ ...c, query: e.query, revision: e.revision })) : [e]))
    .map((e) => readBack(e, chunk.pdpId));
/** A bulk request's checks as `recordBulk` takes them: the records `from`.. without their query and revision. */
const bulkChecks = (from: number, n: number) =>
  range(from, from + n).map(({ query: _query, revision: _revision, ...check }) => JSON.stringify(check));

/** A logger (of PDP "pdp-1" unless told) whose sink keeps the chunks it is given; it ships on flush() and close(). */
function collector(options: Partial<DecisionLoggerOptions> = {}) {
  const chunks: DecisionLogChunk[] = [];
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (chunk) => void chunks.push(chunk),
    flushIntervalMs: 60_000,
    ...options,
  });
  return { logger, chunks };
}

test("decision logger: entries are encoded once, given time-ordered ids, shipped per environment and PDP in bounded chunks", async () => {
  const before = Date.now();
  const { logger, chunks } = collector({ maxBatch: 4 });
  const input = { user: { key: "u0" }, action: "read" };
  logger.record(source, { ...record(1), input });
  input.action = "changed after recording";
  const other: DecisionSource = { environmentId: "e2" };
  for (let i = 2; i <= 10; i++) logger.record(i === 5 ? other : source, record(i));
  const after = Date.now();
  await logger.close();
  assert.deepEqual(
    chunks.map((c) => [c.environmentId, c.pdpId, c.count, parse(c).map((e) => e.latency_us)]),
    [
      ["e", "pdp-1", 4, [1, 2, 3, 4]],
      ["e", "pdp-1", 4, [6, 7, 8, 9]],
      ["e", "pdp-1", 1, [10]],
      ["e2", "pdp-1", 1, [5]],
    ],
  );
  for (const chunk of chunks) {
    const ids = parse(chunk).map((e) => e.id);
    assert.deepEqual([chunk.firstId, chunk.lastId], [ids[0], ids.at(-1)]);
  }
  const entries = chunks.flatMap(parse).sort((a, b) => a.latency_us - b.latency_us);
  for (const e of entries) {
    assert.match(e.id, UUID_RE);
    const ms = timeOfId(e.id);
    assert.ok(before <= ms && ms <= after, "the id's first 48 bits are the time it was recorded");
  }
  assert.deepEqual(
    entries.map((e) => e.id),
    [...entries].map((e) => e.id).sort(),
    "ids are in recording order",
  );
  for (const [i, e] of entries.entries()) {
    // The first entry's input was changed after it was recorded: the entry keeps what it was then.
    const recorded =
      i === 0 ? { ...record(1), input: { user: { key: "u0" }, action: "read" } } : record(i + 1);
    assert.deepEqual(e, readBack({ id: e.id, ...recorded }, "pdp-1"));
  }
});

test("decision logger: a clock that goes back does not take the ids back with it", async (t) => {
  const times = [5_000_000, 4_000_000, 5_000_001];
  t.mock.method(Date, "now", () => times.shift() ?? 6_000_000);
  const { logger, chunks } = collector();
  for (let i = 0; i < 3; i++) logger.record(source, record(i));
  mock.restoreAll();
  await logger.close();
  const entries = chunks.flatMap(parse);
  assert.deepEqual(
    entries.map((e) => Date.parse(e.timestamp)),
    [5_000_000, 5_000_000, 5_000_001],
  );
  assert.ok(entries[0]!.id < entries[1]!.id && entries[1]!.id < entries[2]!.id);
  assert.deepEqual([chunks[0]?.firstId, chunks[0]?.lastId], [entries[0]?.id, entries[2]?.id]);
});

test("decision logger: each entry is the text JSON.stringify writes, for every kind of reason and for strings to escape", async () => {
  const engine = createEngine(fixture);
  const checks: DecisionRecord[] = allQueries(fixture, ["nobody"]).map((q, i) => {
    const d = engine.check(q);
    return {
      query: "check",
      user_key: q.user.key,
      action: q.action,
      resource_type: q.resource.type,
      resource_key: q.resource.key,
      tenant: q.resource.tenant,
      decision: d.allow,
      reason: d.reason,
      revision: i,
      latency_us: i % 7,
    };
  });
  assert.deepEqual(
    [...new Set(checks.map((c) => (c.reason as Reason).kind))].sort(),
    ["abac", "deny", "rbac", "rebac"],
    "the fixture gives every kind of reason",
  );
  assert.ok(
    checks.some(
      (c) => (c.reason as Reason).kind === "rebac" && (c.reason as { via: unknown[] }).via.length > 1,
    ),
  );
  const awkward = [
    'q"uote',
    "back\\slash",
    "new\nline",
    "\u0000\u001f\u007f",
    "\u2028\u00e9",
    "\u{1F600}",
    "\ud800 lone",
    "lone \udfff",
    "",
    "del\u007f",
    // Longer than the buffer an environment's entries start in.
    "long ".repeat(20_000),
  ];
  // Numbers JSON.stringify writes other than as digits alone, and whole ones of every size.
  const numbers = [Number.NaN, Number.POSITIVE_INFINITY, -3, 2.5, 1e21, 2 ** 53, 0, 9, 10, 1234567890123];
  const others: DecisionRecord[] = awkward.map((text, i) => ({
    query: i % 2 === 0 ? "check" : "get_user_permissions",
    user_key: text,
    action: i % 3 === 0 ? undefined : text,
    resource_type: text,
    resource_key: text,
    tenant: i % 2 === 0 ? text : undefined,
    decision: i % 3 === 0 ? undefined : i % 2 === 0,
    reason:
      i % 4 === 0
        ? { kind: "deny", code: "UNKNOWN_USER", message: `user ${text} is not known` }
        : i % 4 === 1
          ? {
              kind: "rebac",
              role: text,
              instance: `doc:${text}`,
              tenant: text,
              via: [{ role: text, instance: text, relation: text }],
            }
          : i % 4 === 2
            ? { kind: "abac", user_set: text, resource_set: text }
            : { kind: "something else", text, n: [1, 2.5] },
    input: i % 2 === 0 ? { user: { key: text }, context: { n: 1.5, list: [text, null, true] } } : undefined,
    result: i % 2 === 1 ? [{ text }] : undefined,
    revision: numbers[i % numbers.length] as number,
    latency_us: numbers[(i + 3) % numbers.length] as number,
  }));
  const { logger, chunks } = collector({ pdpId: 'pdp "one"', maxBatch: 100_000 });
  const expiredDeny: DecisionRecord = {
    ...(others[0] as DecisionRecord),
    decision: false,
    reason: {
      kind: "deny",
      code: "NO_ROLE_IN_TENANT",
      message:
        "user 'u' has no role in tenant 't1'; role writer in tenant 't1' expired at 2030-01-01T00:00:00.000+00:00",
      expired: [{ role: "writer", tenant: "t1", expired_at: "2030-01-01T00:00:00.000+00:00" }],
    },
  };
  const recorded = [...checks, ...others, expiredDeny];
  for (const r of recorded) logger.record(source, r);
  await logger.close();
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0]!.pdpId, 'pdp "one"');
  const ids = parse(chunks[0]!).map((e) => e.id);
  const expected = recorded.map((r, i) => JSON.stringify({ id: ids[i], ...r }));
  assert.equal(text(chunks[0]!), `[${expected.join(",")}]`);
});

test("decision logger: entries written in runs keep their order, their environments and the time they were recorded", async (t) => {
  // More entries than the logger holds before writing a run, over three environments, each at its own time.
  const n = 500;
  let i = 0;
  t.mock.method(Date, "now", () => 9_000_000 + 7 * i);
  const { logger, chunks } = collector({ maxBatch: 30 });
  const environments = ["a", "b", "c"];
  for (i = 0; i < n; i++) {
    logger.record({ environmentId: environments[(i * i) % 3] as string }, record(i));
    // Now and then the event loop turns, and the runs held so far are written.
    if (i % 90 === 89) await new Promise((resolve) => setImmediate(resolve));
  }
  mock.restoreAll();
  await logger.close();
  assert.ok(chunks.every((c) => c.count <= 30 && c.count === parse(c).length));
  const entries = chunks.flatMap((c) => parse(c).map((e) => ({ ...e, environment: c.environmentId })));
  entries.sort((x, y) => (x.id < y.id ? -1 : 1));
  assert.deepEqual(
    entries.map((e) => [e.latency_us, e.environment, e.timestamp]),
    Array.from({ length: n }, (_, k) => [
      k,
      environments[(k * k) % 3],
      toTimestamp(new Date(9_000_000 + 7 * k)),
    ]),
    "by id, the entries are in the order they were recorded, each with its environment and time",
  );
  for (const c of chunks) {
    const ids = parse(c).map((e) => e.id);
    assert.deepEqual([c.firstId, c.lastId], [ids[0], ids.at(-1)]);
  }
});

test("decision logger: an entry's id holds the millisecond it was recorded, across seconds, minutes and days", async (t) => {
  const times = [999, 1000, 1001, 59_999, 60_000, 86_399_999, 86_400_000, 1_795_000_000_123];
  const left = [...times];
  t.mock.method(Date, "now", () => left.shift() ?? 2_000_000_000_000);
  const { logger, chunks } = collector();
  for (let i = 0; i < times.length; i++) logger.record(source, record(i));
  mock.restoreAll();
  await logger.close();
  assert.deepEqual(
    chunks.flatMap(parse).map((e) => e.timestamp),
    times.map((ms) => toTimestamp(new Date(ms))),
  );
});

test("decision logger: ids made in one millisecond keep growing", async (t) => {
  t.mock.method(Date, "now", () => 7_000_000);
  const { logger, chunks } = collector({ maxBatch: 100_000, maxQueue: 100_000 });
  for (let i = 0; i < 70_000; i++) logger.record(source, record(i));
  mock.restoreAll();
  await logger.close();
  const ids = chunks.flatMap(parse).map((e) => e.id);
  assert.equal(ids.length, 70_000);
  assert.ok(
    ids.every((id, i) => i === 0 || (ids[i - 1] as string) < id),
    "ids only grow",
  );
  assert.ok(ids.every((id) => UUID_RE.test(id) && id.startsWith(idAt(7_000_000))));
});

test("decision logger: a drain ships what was queued when it began; a later flush() covers the rest", async () => {
  const delivered: number[] = [];
  let release: () => void = () => {};
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (chunk) => {
      await new Promise<void>((resolve) => (release = resolve));
      delivered.push(...parse(chunk).map((e) => e.latency_us));
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

test("decision logger: once a burst is written, the logger holds none of its entries", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const { logger } = collector();
  const kept: WeakRef<DecisionRecord>[] = [];
  // The checks of one turn of the event loop, far more than a run holds.
  for (let i = 0; i < 1000; i++) {
    const entry = record(i);
    if (i > 300 && i % 100 === 70) kept.push(new WeakRef(entry));
    logger.record(source, entry);
  }
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  assert.deepEqual(
    kept.map((ref) => ref.deref() === undefined),
    kept.map(() => true),
    "the logger holds none of them once they are written",
  );
  await logger.close();
});

test("decision logger: a failing sink is retried, then its chunk is dropped and counted; the queue is bounded, oldest dropped first", async () => {
  let failuresLeft = 2;
  const delivered: number[] = [];
  const retrying = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (chunk) => {
      if (failuresLeft-- > 0) throw new Error("down");
      delivered.push(chunk.count);
    },
    flushIntervalMs: 60_000,
  });
  retrying.record(source, record(1));
  await retrying.flush();
  await retrying.flush();
  assert.deepEqual(delivered, []);
  retrying.record(source, record(2));
  await retrying.flush();
  assert.deepEqual(delivered, [1, 1], "delivered once the sink came back, the older chunk first");
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
  assert.equal(dead.dropped, 3, "past maxQueue the oldest entries (a chunk of three) are dropped");
  assert.equal(dead.queued, 2);
  for (let i = 0; i < 5; i++) await dead.flush();
  assert.equal(dead.dropped, 5, "after five failures in a row the chunk is given up");
  assert.equal(dead.queued, 0);
  assert.equal(errors.length, 5);
  await dead.close();
});

test("decision logger: while the sink is only away (retryable), chunks wait however long it takes, bounded, the newest kept", async () => {
  const away = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  let up = false;
  const delivered: DecisionLogEntry[] = [];
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (chunk) => {
      if (!up) throw away;
      delivered.push(...parse(chunk));
    },
    maxBatch: 2,
    maxQueue: 6,
    flushIntervalMs: 60_000,
    retryable: (e) => e === away,
  });
  for (let i = 0; i < 4; i++) logger.record(source, record(i));
  for (let i = 0; i < 10; i++) await logger.flush();
  assert.equal(logger.dropped, 0, "ten failed shipments in a row give nothing up");
  assert.equal(logger.queued, 4);
  // A chunk sealed while a shipment is failing is kept after the older ones.
  for (let i = 4; i < 10; i++) logger.record(source, record(i));
  await logger.flush();
  assert.equal(logger.dropped, 4, "past maxQueue the oldest chunks go first");
  assert.equal(logger.queued, 6);
  up = true;
  await logger.flush();
  assert.deepEqual(
    delivered.map((e) => e.revision),
    [4, 5, 6, 7, 8, 9].map((i) => record(i).revision),
    "the newest entries are shipped, in order, once the sink is back",
  );
  assert.equal(logger.queued, 0);
  await logger.close();
});

test("decision logger: entries recorded past the bound while a slow shipment is in flight drop the oldest waiting chunk, not the newest", async () => {
  let release = () => {};
  const delivered: DecisionLogEntry[] = [];
  const logger = createDecisionLogger({
    pdpId: "pdp-1",
    sink: async (chunk) => {
      await new Promise<void>((resolve) => (release = resolve));
      delivered.push(...parse(chunk));
    },
    maxBatch: 2,
    maxQueue: 6,
    flushIntervalMs: 60_000,
  });
  for (let i = 0; i < 6; i++) logger.record(source, record(i));
  const shipping = logger.flush(); // the sink now holds the chunk [0, 1]; [2, 3] and [4, 5] wait
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 6; i < 8; i++) logger.record(source, record(i));
  assert.equal(logger.dropped, 2, "one chunk of two went");
  for (let n = 0; n < 20 && logger.queued > 0; n++) {
    release();
    await new Promise((resolve) => setImmediate(resolve));
    if (n % 3 === 2) void logger.flush();
  }
  release();
  await shipping;
  await logger.close();
  assert.deepEqual(
    delivered.map((e) => e.revision),
    [0, 1, 4, 5, 6, 7].map((i) => record(i).revision),
    "the chunk in flight is shipped, the oldest waiting one [2, 3] is dropped, the newest are kept",
  );
});

const production = (env: TestEnv) => env.acme.envs.production;

/** The chunks a logger ships for `records`. */
async function chunksOf(environmentId: string, records: DecisionRecord[]): Promise<DecisionLogChunk[]> {
  const { logger, chunks } = collector();
  for (const r of records) logger.record({ environmentId }, r);
  await logger.close();
  return chunks;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => record(from + i));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEachDialect("decision log storage", (env) => {
  const store = (chunk: DecisionLogChunk) =>
    insertDecisionLogChunk(env().store.db, env().dialect, chunk, now());
  const list = (f: DecisionLogFilter, offset: number, limit: number, environmentId = production(env())) =>
    listDecisionLogs(env().store.db, env().dialect, environmentId, f, offset, limit);

  test("a chunk is one row; its entries read back as recorded; a chunk shipped twice or of a deleted environment is left out", async () => {
    const [chunk] = await chunksOf(production(env()), range(0, 12));
    assert.ok(chunk);
    assert.equal(await store(chunk), 12);
    assert.equal(await store(chunk), 0, "shipped again after a lost answer: stored once");
    const [orphan] = await chunksOf(GONE, range(0, 3));
    assert.equal(await store(orphan as DecisionLogChunk), 0);
    const { rows, total } = await list({}, 0, 100);
    assert.equal(total, 12);
    assert.deepEqual(
      rows.map((r) => r.entry),
      parse(chunk).reverse(),
      "newest first, every value as recorded",
    );
    for (const r of rows) assert.ok(r.created_at >= r.entry.timestamp.slice(0, 19));
    const chunks = await env().store.db.selectFrom("decision_log_chunks").selectAll().execute();
    assert.equal(chunks.length, 1);
    // The chunk is shipped as bytes; the column holds text (on SQLite a bound buffer would stay a BLOB).
    assert.equal(typeof chunks[0]?.entries, "string");
    assert.equal(chunks[0]?.entries, text(chunk));
    await env().store.db.deleteFrom("decision_log_chunks").execute();
  });

  test("lists agree with a naive reading of every entry: pages, totals and each filter, across overlapping chunks of two PDPs", async () => {
    // Two PDPs deciding at the same time and shipping small chunks, so that their chunks overlap in time.
    const a = collector({ maxBatch: 7 });
    const b = collector({ pdpId: "pdp-2", maxBatch: 3 });
    const source = { environmentId: production(env()) };
    for (let i = 0; i < 120; i++) {
      a.logger.record(source, record(i));
      if (i % 2 === 0) b.logger.record(source, record(i + 1000));
      // A bulk request of four checks: one entry, four decisions.
      if (i % 10 === 5)
        a.logger.recordBulk(source, { query: "bulk_check", revision: 500 + i }, bulkChecks(2000 + i, 4));
      if (i % 10 === 9) await sleep(2);
    }
    await a.logger.close();
    await b.logger.close();
    const chunks = [...a.chunks, ...b.chunks];
    for (const chunk of chunks) await store(chunk);
    const all = chunks.flatMap(parse);
    assert.equal(all.length, 180 + 12 * 4);
    assert.equal(
      chunks.reduce((n, c) => n + c.count, 0),
      all.length,
      "a chunk counts the checks of its bulk entries",
    );
    assert.ok(chunks.every((c) => c.count <= 7 + 4 || c.pdpId === "pdp-2"));
    assert.equal(new Set(all.map((e) => e.id)).size, all.length, "each check has an id of its own");
    assert.equal(all.filter((e) => e.query === "bulk_check").length, 48);
    assert.ok(
      a.chunks.some((x) => b.chunks.some((y) => x.firstId < y.firstId && y.firstId < x.lastId)),
      "some chunks overlap",
    );
    const [elsewhere] = await chunksOf(env().acme.envs.development, range(0, 5));
    await store(elsewhere as DecisionLogChunk);

    const newestFirst = [...all].sort((x, y) => (x.id < y.id ? 1 : -1));
    const times = newestFirst.map((e) => Date.parse(e.timestamp));
    const middle = times[Math.floor(times.length / 2)] as number;
    const filters: [DecisionLogFilter, (e: DecisionLogEntry) => boolean][] = [
      [{}, () => true],
      [{ users: [record(1).user_key as string] }, (e) => e.user_key === record(1).user_key],
      [
        { users: [record(1).user_key as string, record(2).user_key as string] },
        (e) => e.user_key === record(1).user_key || e.user_key === record(2).user_key,
      ],
      [{ decision: true }, (e) => e.decision === true],
      [{ decision: false }, (e) => e.decision === false],
      [{ resources: ["document"] }, (e) => e.resource_type === "document"],
      [{ tenant: "t1" }, (e) => e.tenant === "t1"],
      [{ action: "write" }, (e) => e.action === "write"],
      [{ pdpId: "pdp-2" }, (e) => e.pdp_id === "pdp-2"],
      [{ query: "get_user_permissions" }, (e) => e.query === "get_user_permissions"],
      [{ query: "bulk_check" }, (e) => e.query === "bulk_check"],
      [{ query: "bulk_check", decision: false }, (e) => e.query === "bulk_check" && e.decision === false],
      [{ fromMs: middle }, (e) => Date.parse(e.timestamp) >= middle],
      [{ toMs: middle }, (e) => Date.parse(e.timestamp) <= middle],
      [
        { fromMs: middle, toMs: middle, decision: false },
        (e) => Date.parse(e.timestamp) === middle && e.decision === false,
      ],
      [{ users: ["nobody"] }, () => false],
    ];
    for (const [filter, keep] of filters) {
      const expected = newestFirst.filter(keep).map((e) => e.id);
      for (const [offset, limit] of [
        [0, 1],
        [0, 10],
        [3, 7],
        [17, 5],
        [100, 30],
        [0, 1000],
        [expected.length, 10],
      ] as const) {
        const { rows, total } = await list(filter, offset, limit);
        assert.equal(total, expected.length, `total of ${JSON.stringify(filter)}`);
        assert.deepEqual(
          rows.map((r) => r.entry.id),
          expected.slice(offset, offset + limit),
          `${JSON.stringify(filter)} at ${offset}+${limit}`,
        );
      }
    }
    assert.equal((await list({}, 0, 100, env().acme.envs.development)).total, 5);

    const bulkOnes = newestFirst.filter((e) => e.query === "bulk_check");
    for (const e of [
      newestFirst[0],
      newestFirst[57],
      newestFirst.at(-1),
      bulkOnes[1],
      bulkOnes.at(-1),
    ] as DecisionLogEntry[]) {
      const found = await findDecisionLog(env().store.db, env().dialect, production(env()), e.id);
      assert.deepEqual(found?.entry, e);
    }
    const id = newestFirst[0]?.id as string;
    assert.equal(
      await findDecisionLog(env().store.db, env().dialect, env().acme.envs.development, id),
      undefined,
    );
    assert.equal(await findDecisionLog(env().store.db, env().dialect, production(env()), GONE), undefined);
  });

  test("the purge deletes the chunks whose every entry is older than the cutoff", async () => {
    const { db } = env().store;
    const stored = async () =>
      (await db.selectFrom("decision_log_chunks").select("count").execute()).reduce((n, c) => n + c.count, 0);
    const entries: DecisionLogEntry[] = [];
    for (let i = 0; i < 3; i++) {
      for (const chunk of await chunksOf(production(env()), range(i, i + 1))) {
        await store(chunk);
        entries.push(...parse(chunk));
      }
      await sleep(3);
    }
    const before = await stored();
    const cutoff = Date.parse(entries[2]!.timestamp);
    assert.equal(
      await purgeDecisionLogs(db, cutoff),
      before - 1,
      "every chunk but the last one ends before it",
    );
    const left = await list({}, 0, 1000);
    assert.deepEqual(
      left.rows.map((r) => r.entry.id),
      [entries[2]?.id],
    );
    assert.equal(await purgeDecisionLogs(db, Date.now() + 1000), 1);
    assert.equal(await stored(), 0);
  });

  test("the purge deletes a batch of chunks per statement and lets others in between", async () => {
    const { db } = env().store;
    const chunks: DecisionLogChunk[] = [];
    for (let i = 0; i < 7; i++) {
      for (const chunk of await chunksOf(production(env()), range(i, i + 1))) {
        await store(chunk);
        chunks.push(chunk);
      }
      await sleep(2);
    }
    const newest = await chunksOf(production(env()), range(7, 8));
    for (const chunk of newest) await store(chunk);
    const stored = await db.selectFrom("decision_log_chunks").select("count").execute();
    assert.equal(stored.length, chunks.length + newest.length);
    const olderCount = chunks.reduce((n, chunk) => n + parse(chunk).length, 0);
    // Between batches, a reader sees some of the old chunks gone and some not yet (one statement shows all or none).
    const seen = new Set<number>();
    let purging = true;
    const look = async () => {
      while (purging) {
        seen.add((await db.selectFrom("decision_log_chunks").select("first_id").execute()).length);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const looking = look();
    const cutoff = Date.parse(parse(newest[0]!)[0]!.timestamp);
    assert.equal(await purgeDecisionLogs(db, cutoff, 2), olderCount);
    purging = false;
    await looking;
    const between = [...seen].filter((n) => n > newest.length && n < stored.length);
    assert.ok(between.length > 0, `counts seen during the purge: ${[...seen].join(", ")}`);
    assert.equal((await list({}, 0, 1000)).rows.length, parse(newest[0]!).length);
  });

  test("migration 0009 moves the decisions of the old table into chunks", async () => {
    const { db } = env().store;
    // Back to the schema of migration 0008, with two decisions of the old shape.
    await db.schema.dropTable("decision_log_chunks").execute();
    await sql`delete from gatehouse_migrations where name in ('0009_decision_log_chunks', '0011_decision_log_pdp')`.execute(
      db,
    );
    await createOldTable(db as never);
    await dropOldTimeIndex(db as never);
    const old = (id: string, i: number) => ({
      id,
      organization_id: env().acme.id,
      project_id: env().acme.projectId,
      environment_id: production(env()),
      pdp_id: "pdp-old",
      query: "check",
      user_key: `u${i}`,
      action: "read",
      resource_type: "document",
      resource_key: null,
      tenant: "t1",
      decision: i,
      reason: i === 1 ? JSON.stringify({ kind: "rbac", role: "viewer", tenant: "t1" }) : null,
      input: i === 0 ? JSON.stringify({ context: { ip: "10.0.0.1" } }) : null,
      result: null,
      revision: 40 + i,
      latency_us: 3,
      timestamp: "2026-11-01T10:00:00.000+00:00",
      created_at: "2026-11-01T10:00:01.000+00:00",
    });
    const at = idAt(Date.parse("2026-11-01T10:00:00Z"));
    const ids = [`${at}-7000-8000-000000000001`, `${at}-7000-8000-000000000002`];
    for (const [i, id] of ids.entries()) {
      const row = old(id, i);
      await sql`insert into decision_logs (${sql.join(Object.keys(row).map((k) => sql.ref(k)))})
        values (${sql.join(Object.values(row))})`.execute(db);
    }
    await migrateToLatest(env().store);
    const { rows } = await list({}, 0, 10);
    assert.deepEqual(
      rows.map((r) => [r.entry, r.created_at]),
      [
        [
          {
            id: ids[1],
            timestamp: "2026-11-01T10:00:00.000+00:00",
            pdp_id: "pdp-old",
            query: "check",
            user_key: "u1",
            action: "read",
            resource_type: "document",
            resource_key: null,
            tenant: "t1",
            decision: true,
            reason: { kind: "rbac", role: "viewer", tenant: "t1" },
            input: null,
            result: null,
            revision: 41,
            latency_us: 3,
          },
          "2026-11-01T10:00:01.000+00:00",
        ],
        [
          {
            id: ids[0],
            timestamp: "2026-11-01T10:00:00.000+00:00",
            pdp_id: "pdp-old",
            query: "check",
            user_key: "u0",
            action: "read",
            resource_type: "document",
            resource_key: null,
            tenant: "t1",
            decision: false,
            reason: null,
            input: { context: { ip: "10.0.0.1" } },
            result: null,
            revision: 40,
            latency_us: 3,
          },
          "2026-11-01T10:00:01.000+00:00",
        ],
      ],
    );
    assert.equal((await list({ users: ["u0"] }, 0, 10)).total, 1, "filters read the moved entries");
    assert.equal(
      (await list({ pdpId: "pdp-old" }, 0, 10)).total,
      2,
      "the PDP an entry of an older chunk names",
    );
    const [newer] = await chunksOf(production(env()), range(0, 3));
    await store(newer as DecisionLogChunk);
    assert.deepEqual(
      (await list({ pdpId: "pdp-1" }, 0, 10)).rows.map((r) => r.entry),
      parse(newer as DecisionLogChunk).reverse(),
      "beside them, a newer chunk's PDP",
    );
    assert.equal((await list({}, 0, 10)).total, 5);
  });
});

test("SQLite writer thread: stores chunks on its own connection (synchronous NORMAL), leaves out deleted environments and repeats, reports errors", async () => {
  const env = await createTestEnv("sqlite");
  try {
    const writerDb = openSqliteDecisionLogWriter(env.store.location.sqliteFile as string);
    const writer = { write: (c: DecisionLogChunk) => insertDecisionLogChunk(writerDb, "sqlite", c, now()) };
    const [chunk] = await chunksOf(production(env), range(100, 150));
    assert.equal(await writer.write(chunk as DecisionLogChunk), 50);
    // Its commits skip the disk, but not the syncs around its checkpoints (they copy the API's acknowledged writes).
    const mode = await sql<{ synchronous: number }>`pragma synchronous`.execute(writerDb);
    assert.deepEqual(mode.rows, [{ synchronous: 1 }], "synchronous = NORMAL, not OFF");
    const { rows } = await listDecisionLogs(env.store.db, "sqlite", production(env), {}, 0, 1000);
    assert.deepEqual(
      rows.map((r) => r.entry),
      parse(chunk as DecisionLogChunk).reverse(),
      "visible to the main connection",
    );
    assert.equal(await writer.write(chunk as DecisionLogChunk), 0, "a repeat is stored once");
    const [orphan] = await chunksOf(GONE, range(150, 152));
    assert.equal(
      await writer.write(orphan as DecisionLogChunk),
      0,
      "the deleted environment's chunk is left out",
    );
    await assert.rejects(
      writer.write({ ...(chunk as DecisionLogChunk), firstId: "another", entries: null as never }),
      /decision log writer: NOT NULL constraint failed/,
    );
    await writerDb.destroy();
    await assert.rejects(writer.write(chunk as DecisionLogChunk), /destroyed/);
  } finally {
    await env.app.close();
    await env.store.close();
  }
});

test("SQLite reader thread: reads what the main connection committed, refuses writes, and leaves the event loop free while it reads", async () => {
  const env = await createTestEnv("sqlite");
  const reader = openSqliteDecisionLogReader(env.store.location.sqliteFile as string);
  try {
    const chunks = await chunksOf(production(env), range(0, 20_000));
    for (const chunk of chunks) await insertDecisionLogChunk(env.store.db, "sqlite", chunk, now());
    const filter: DecisionLogFilter = { decision: false, action: "write" };
    const expected = await listDecisionLogs(env.store.db, "sqlite", production(env), filter, 0, 10);
    assert.ok(expected.total > 0);

    // While the thread unpacks every chunk, the main thread keeps turning: count its turns.
    let turns = 0;
    let reading = true;
    const spin = () => {
      turns++;
      if (reading) setImmediate(spin);
    };
    setImmediate(spin);
    const read = await listDecisionLogs(reader, "sqlite", production(env), filter, 0, 10);
    reading = false;
    assert.deepEqual(read, expected);
    assert.ok(turns >= 10, `the event loop turned ${turns} times while the thread read`);

    await assert.rejects(
      sql`delete from decision_log_chunks`.execute(reader),
      /decision log reader: attempt to write a readonly database/,
    );
    assert.equal((await listDecisionLogs(env.store.db, "sqlite", production(env), {}, 0, 1)).total, 20_000);
  } finally {
    await reader.destroy();
    await env.app.close();
    await env.store.close();
  }
});
