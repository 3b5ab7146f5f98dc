import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { openLogExport, type LogExport } from "../../src/domain/log-export/log-export.ts";
import { toLogRow, type CapturedCall } from "../../src/domain/api-log-writer.ts";
import { newId, timeOfId } from "../../src/lib/ids.ts";
import { decisionLines } from "../../src/domain/log-export/records.ts";
import { now, toTimestamp } from "../../src/lib/time.ts";
import { createDecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import type { DecisionLogChunk, DecisionRecord } from "../../src/pdp/storage.ts";
import { freePort } from "../helpers/process.ts";

const SECRET = "gh_live_unit-export-secret-0123456789abcdef";
const quiet = { warn() {} };

/** An API log row as the writer stores it, of a call that sent the caller's key in its body too. */
function row(i: number) {
  const call: CapturedCall = {
    id: newId(),
    requestId: `req-${i}`,
    timestamp: now(),
    method: "POST",
    url: `/v2/facts/p/e/users?n=${i}`,
    status: 201,
    durationMs: 2,
    clientIp: "127.0.0.1",
    principal: null,
    projectRef: "p",
    envRef: "e",
    requestBody: { key: `user-${i}`, note: SECRET, password: "hunter2-unit" },
    responseBody: null,
    bearer: SECRET,
  };
  return toLogRow(call, { project: null, environment: null }, 10_000);
}

/** A decision log chunk of `n` entries of environment `env`, as the PDP writes them. */
function chunk(env: string, first: number, n: number) {
  const entries = Array.from({ length: n }, (_, k) => ({
    id: newId(),
    query: "check",
    user_key: `user-${first + k}`,
    action: "read",
    resource_type: "document",
    decision: true,
    revision: 3,
    latency_us: 12,
  }));
  return {
    environmentId: env,
    pdpId: "pdp-1",
    entries: Buffer.from(JSON.stringify(entries)),
    count: n,
    firstId: entries[0]!.id,
    lastId: entries.at(-1)!.id,
  };
}

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-export-"));

async function until(what: () => boolean, message: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!what()) {
    if (Date.now() > deadline) assert.fail(message);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("log export to a file: NDJSON of both logs, rotated by size, the newest <keep> files kept, secrets redacted", async () => {
  const dir = tmp();
  const file = path.join(dir, "out", "gatehouse.ndjson");
  const exporter = await openLogExport({
    spoolDir: path.join(dir, "spool"),
    spoolBytes: 1 << 20,
    logs: ["decision", "api"],
    file: { path: file, maxBytes: 3000, keep: 2 },
    log: quiet,
  });
  try {
    const expected: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = row(i);
      exporter.apiCalls([r]);
      expected.push(`api ${r.id}`);
      const c = chunk(i % 2 ? "env-a" : "env-b", i * 2, 2);
      exporter.decisions(c);
      for (const e of JSON.parse(c.entries.toString()) as { id: string }[]) expected.push(`decision ${e.id}`);
      await exporter.flush();
    }
    assert.deepEqual(fs.readdirSync(path.dirname(file)).sort(), [
      "gatehouse.ndjson",
      "gatehouse.ndjson.1",
      "gatehouse.ndjson.2",
    ]);
    const texts = [`${file}.2`, `${file}.1`, file].map((f) => fs.readFileSync(f, "utf8"));
    for (const text of texts) assert.ok(Buffer.byteLength(text) <= 3000, "a file past its bound");
    const records = texts.flatMap((t) =>
      t
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    );
    // The kept files hold the newest records, in order, none missing between them.
    const seen = records.map((r) => `${r.log} ${r.id}`);
    assert.ok(seen.length > 9 && seen.length < expected.length, `${seen.length} records kept`);
    assert.deepEqual(seen, expected.slice(expected.length - seen.length));
    const decision = records.find((r) => r.log === "decision");
    assert.equal(decision.pdp_id, "pdp-1");
    assert.match(decision.environment_id, /^env-[ab]$/);
    assert.match(decision.timestamp, /^\d{4}-\d\d-\d\dT/);
    assert.equal(decision.action, "read");
    const api = records.find((r) => r.log === "api");
    assert.equal(api.method, "POST");
    assert.equal(api.status, 201);
    const all = texts.join("");
    assert.ok(!all.includes(SECRET) && !all.includes("hunter2-unit"), "a secret in the export");
    assert.equal(exporter.stats()[0]!.dropped, 0);
  } finally {
    await exporter.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** An HTTP receiver that can go away and come back on its port; it keeps each batch's records. */
async function receiver(port: number) {
  const batches: { type: string; records: { id: string }[] }[] = [];
  let server: http.Server | undefined;
  const start = () =>
    new Promise<void>((resolve) => {
      server = http.createServer((req, res) => {
        let body = "";
        req.on("data", (d: Buffer) => (body += d.toString()));
        req.on("end", () => {
          const type = String(req.headers["content-type"]);
          const records = type.includes("ndjson")
            ? body
                .split("\n")
                .filter(Boolean)
                .map((l) => JSON.parse(l))
            : JSON.parse(body);
          batches.push({ type, records });
          res.writeHead(200).end();
        });
      });
      server.listen(port, "127.0.0.1", () => resolve());
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      server?.closeAllConnections();
      server?.close(() => resolve());
    });
  return { batches, start, stop, ids: () => batches.flatMap((b) => b.records.map((r) => r.id)) };
}

async function httpExport(dir: string, port: number, spoolBytes: number, format: "ndjson" | "json") {
  return openLogExport({
    spoolDir: path.join(dir, "spool"),
    spoolBytes,
    logs: ["api"],
    http: { url: `http://127.0.0.1:${port}/ingest`, format, headers: { authorization: "Bearer sink-token" } },
    flushIntervalMs: 50,
    log: quiet,
  });
}

test("log export over HTTP: while the receiver is away records wait on disk, then all arrive in order; a full spool drops the oldest, counted", async () => {
  const dir = tmp();
  const port = await freePort();
  const sink = await receiver(port);
  let exporter: LogExport | undefined;
  try {
    // Away: nothing listens on the port. The spool holds about six batches of five records.
    exporter = await httpExport(dir, port, 6 * 5 * 700, "json");
    const sent: string[] = [];
    for (let b = 0; b < 20; b++) {
      const rows = Array.from({ length: 5 }, (_, k) => row(b * 5 + k));
      exporter.apiCalls(rows);
      sent.push(...rows.map((r) => r.id as string));
      await exporter.flush();
    }
    const away = exporter.stats()[0]!;
    assert.ok(away.failures > 0, "no failure counted");
    assert.ok(away.dropped > 0 && away.dropped % 5 === 0, `dropped ${away.dropped}`);
    assert.equal(away.queued + away.dropped, sent.length);
    assert.ok(away.spoolBytes > 0 && away.spoolBytes <= 6 * 5 * 700);
    assert.ok(away.lagSeconds > 0);

    await sink.start();
    await until(() => exporter!.stats()[0]!.queued === 0, "the spool was never shipped");
    // What was kept is the newest, in order, each record once; the batches are JSON arrays.
    assert.deepEqual(sink.ids(), sent.slice(away.dropped));
    assert.ok(sink.batches.every((b) => b.type === "application/json"));
    const back = exporter.stats()[0]!;
    assert.equal(back.shipped, sent.length - away.dropped);
    assert.equal(back.lagSeconds, 0);
  } finally {
    await exporter?.close();
    await sink.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("decision lines: an entry shipped by a standalone PDP keeps its time and names its PDP once", () => {
  const [a, b] = [newId(), newId()];
  const entries = [
    { id: a, pdp_id: "pdp-9", timestamp: "2026-01-02T03:04:05.006+00:00", query: "check", decision: false },
    { id: b, pdp_id: "pdp-9", query: "check", decision: true },
  ];
  const lines = decisionLines({
    environmentId: "env-s",
    pdpId: "pdp-9",
    entries: Buffer.from(JSON.stringify(entries)),
    count: 2,
    firstId: a,
    lastId: b,
  })
    .toString()
    .split("\n");
  assert.equal(lines.pop(), "");
  assert.ok(lines.every((l) => l.split('"pdp_id"').length === 2 && l.split('"timestamp"').length === 2));
  const [first, second] = lines.map((l) => JSON.parse(l));
  assert.deepEqual(first, {
    log: "decision",
    environment_id: "env-s",
    pdp_id: "pdp-9",
    timestamp: "2026-01-02T03:04:05.006+00:00",
    id: a,
    query: "check",
    decision: false,
  });
  assert.equal(second.timestamp, toTimestamp(new Date(timeOfId(b))));
  assert.equal(second.decision, true);
});

test("decision lines: a logger's chunk is copied, not parsed, into the same lines; a bulk entry's checks are a line each", async () => {
  const chunks: DecisionLogChunk[] = [];
  const logger = createDecisionLogger({ pdpId: "pdp-1", sink: async (chunk) => void chunks.push(chunk) });
  const env = { environmentId: "env-c" };
  const plain = (i: number): DecisionRecord => ({
    query: "check",
    user_key: `user-${i}`,
    action: "read",
    resource_type: "document",
    tenant: "t1",
    decision: i % 2 === 0,
    reason: { kind: "rbac", role: "viewer" },
    revision: 4,
    latency_us: 9,
  });
  for (let i = 0; i < 70; i++) logger.record(env, plain(i));
  logger.recordBulk(env, { query: "bulk_check", revision: 5 }, [
    JSON.stringify({ user_key: "bulk-a", decision: true, latency_us: 1 }),
    JSON.stringify({ user_key: "bulk-b", decision: false, latency_us: 1 }),
  ]);
  // Text that JSON escapes, and an entry with its request.
  logger.record(env, { ...plain(1), user_key: 'ü"\\x\n', input: { context: { note: "é" } } });
  await logger.flush();
  assert.equal(chunks.length, 1);
  const chunk = chunks[0]!;
  assert.ok(chunk.spans, "the logger says where each decision is");
  const copied = decisionLines(chunk).toString();
  // The same chunk as a standalone PDP ships it (no spans): parsed, and the same lines.
  assert.equal(copied, decisionLines({ ...chunk, spans: undefined }).toString());
  const lines = copied.split("\n");
  assert.equal(lines.pop(), "");
  const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(records.length, 73);
  assert.deepEqual(records[0], {
    log: "decision",
    environment_id: "env-c",
    pdp_id: "pdp-1",
    timestamp: toTimestamp(new Date(timeOfId(records[0]!["id"] as string))),
    id: records[0]!["id"],
    ...plain(0),
  });
  const [a, b, last] = records.slice(70);
  assert.deepEqual(
    [a, b].map((r) => [r!["user_key"], r!["decision"], r!["query"], r!["revision"], r!["pdp_id"]]),
    [
      ["bulk-a", true, "bulk_check", 5, "pdp-1"],
      ["bulk-b", false, "bulk_check", 5, "pdp-1"],
    ],
  );
  assert.equal(new Set(records.map((r) => r["id"])).size, 73);
  assert.deepEqual([last!["user_key"], last!["input"]], ['ü"\\x\n', { context: { note: "é" } }]);
});
