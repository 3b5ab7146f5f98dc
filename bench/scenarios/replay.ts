import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { insertDecisionLogChunk } from "../../src/domain/decision-log/database-sink.ts";
import { openSqliteDecisionLogReader } from "../../src/domain/decision-log/sqlite-threads.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import type { EnvScope } from "../../src/domain/path-scope.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { now } from "../../src/lib/time.ts";
import { createPolicyReplay, type ReplayResult } from "../../src/modules/policy/policy.replay.ts";
import { createEngine, type CheckQuery } from "../../src/pdp/engine/index.ts";
import { createDecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import type { DecisionLogChunk } from "../../src/pdp/storage.ts";
import { SCALE } from "../lib/config.ts";
import { fmt } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { openBenchStore } from "../lib/store.ts";

/*
 * What-if replay (docs/policy-as-code.md#what-if-replay) in process, as the API runs it: the decision log's window
 * read from SQLite on the reader thread a few chunks at a time, each check decided on the environment and on the
 * draft. The baseline in the same run is the engine's plain check rate on the same checks (one engine, no log).
 */

const USERS = 10_000;
const TENANTS = 100;
const ROLES = ["viewer", "editor", "admin"];
const ACTIONS = ["read", "write", "delete"];

const policyYaml = (adminDeletes: boolean) => `version: 1
resources:
  document:
    name: Document
    actions: { read: { name: Read }, write: { name: Write }, delete: { name: Delete } }
roles:
  viewer: { name: Viewer, permissions: [document:read] }
  editor: { name: Editor, permissions: [document:read, document:write${adminDeletes ? "" : ", document:delete"}] }
  admin: { name: Admin, permissions: [document:read, document:write${adminDeletes ? ", document:delete" : ""}] }
`;

/** The i-th logged check: user i mod 10,000 in its tenant; `distinct` adds a context no other check has. */
function checkOf(i: number, distinct: boolean): CheckQuery {
  const user = i % USERS;
  return {
    user: { key: `user-${user}` },
    action: ACTIONS[i % ACTIONS.length] as string,
    resource: { type: "document", tenant: `tenant-${user % TENANTS}` },
    ...(distinct && { context: { request: i } }),
  };
}

/** Whether the draft flips check i: admins lose document:delete, editors gain it. */
const flips = (i: number) => i % ACTIONS.length === 2 && (i % USERS) % ROLES.length !== 0;
const flipsIn = (from: number, to: number) => {
  let n = 0;
  for (let i = from; i < to; i++) if (flips(i)) n++;
  return n;
};

interface Run {
  decisions: number;
  ms: number;
  decisions_per_s: number;
  /** The heap's peak above the start, garbage included (sampled every 20 ms). */
  peak_heap_mb: number;
  /** The live heap's peak above the start: sampled after a full collection every 100 ms, in a second run. */
  live_heap_mb: number;
  peak_rss_mb: number;
  longest_stall_ms: number;
  flipped: number;
}

/** The collector, exposed at run time (the bench runs without --expose-gc). */
function collector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

/** Runs `work` while sampling memory above `base` and the event loop's longest gap between turns. */
async function measure(
  work: () => Promise<ReplayResult>,
): Promise<
  { result: ReplayResult } & Omit<Run, "decisions" | "decisions_per_s" | "flipped" | "live_heap_mb">
> {
  collector()();
  const base = process.memoryUsage();
  let heap = 0;
  let rss = 0;
  let longest = 0;
  let last = performance.now();
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    heap = Math.max(heap, m.heapUsed - base.heapUsed);
    rss = Math.max(rss, m.rss - base.rss);
  }, 20);
  let running = true;
  const turn = () => {
    const t = performance.now();
    longest = Math.max(longest, t - last);
    last = t;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  running = false;
  clearInterval(sampler);
  return {
    result,
    ms,
    peak_heap_mb: heap / 2 ** 20,
    peak_rss_mb: rss / 2 ** 20,
    longest_stall_ms: longest,
  };
}

/** The live heap's peak while `work` runs: a full collection, then heapUsed, every 100 ms. */
async function liveHeap(work: () => Promise<unknown>): Promise<number> {
  const gc = collector();
  gc();
  const base = process.memoryUsage().heapUsed;
  let peak = 0;
  const sampler = setInterval(() => {
    gc();
    peak = Math.max(peak, process.memoryUsage().heapUsed - base);
  }, 100);
  await work();
  clearInterval(sampler);
  return peak / 2 ** 20;
}

export interface ReplayData {
  engine_checks_per_s: number;
  build_ms: number;
  runs: Record<string, Run>;
}

export const replayScenario: Scenario<ReplayData> = {
  name: "replay",
  description:
    "How fast is what-if replay of the decision log, and is its memory bounded? Decisions/s and peak memory replaying " +
    "100,000 and 1,000,000 logged checks against a draft (SQLite, in process), against the engine's plain check rate.",
  async run(ctx: Context): Promise<ReplayData> {
    const windows = SCALE === "small" ? [10_000, 100_000] : [100_000, 1_000_000];
    const bench = await openBenchStore(ctx.res, "sqlite");
    const box = createSecretBox("bench-secret-key-that-is-long-enough-00");
    const config = { ...loadConfig([], {}), apiLog: "off" as const };
    const app = await buildApp({ config, store: bench.store, box, logger: false } as Parameters<
      typeof buildApp
    >[0]);
    await app.ready();
    const reader = openSqliteDecisionLogReader(bench.sqliteFile as string);
    try {
      const org = await createOrganizationRecords(bench.store.db, box, { key: "replay", name: "Replay" });
      const env = await bench.store.db
        .selectFrom("environments")
        .selectAll()
        .where("organization_id", "=", org.organization.id)
        .where("key", "=", "production")
        .executeTakeFirstOrThrow();
      const call = async (method: "POST" | "PUT", url: string, body: unknown) => {
        const res = await app.inject({
          method,
          url,
          headers: { authorization: `Bearer ${org.adminKeySecret}` },
          payload: body as object,
        });
        if (res.statusCode >= 300) fail(`${url}: ${res.statusCode} ${res.body}`);
        return res.json() as Record<string, unknown>;
      };
      const path = `/v2/schema/${env.project_id}/production/policy`;
      await call("POST", `${path}/apply`, { policy: policyYaml(true), revision: Number(env.revision) });
      const facts = `/v2/facts/${env.project_id}/production`;
      const tenants = Array.from({ length: TENANTS }, (_, t) => ({ key: `tenant-${t}`, name: `T${t}` }));
      await call("POST", `${facts}/bulk/tenants`, { operations: tenants });
      for (let from = 0; from < USERS; from += 1000) {
        const users = Array.from({ length: 1000 }, (_, i) => ({ key: `user-${from + i}` }));
        await call("PUT", `${facts}/bulk/users`, { operations: users });
        await call(
          "POST",
          `${facts}/role_assignments/bulk`,
          users.map((u, i) => ({
            user: u.key,
            role: ROLES[(from + i) % ROLES.length],
            tenant: `tenant-${(from + i) % TENANTS}`,
          })),
        );
      }
      ctx.log(`seeded ${fmt(USERS)} users in ${TENANTS} tenants`);

      // The baseline: the engine's plain check rate on the same checks.
      const replay = createPolicyReplay({ store: bench.store, readDb: reader });
      const scope = {
        organizationId: org.organization.id,
        project: { id: env.project_id },
        environment: env,
      } as unknown as EnvScope;
      const warm = await replay.replay(scope, {
        draft: { policy: policyYaml(false) },
        checks: Array.from({ length: 3000 }, (_, i) => checkOf(i, false)),
      });
      if (warm.flipped !== flipsIn(0, 3000))
        fail(`3,000 checks: ${warm.flipped} flips, not ${flipsIn(0, 3000)}`);
      const engineRate = await engineCheckRate(bench.store, scope);
      // What every replay costs before its first decision: both engines built from the environment's snapshot.
      const build = await measure(() =>
        replay.replay(scope, { draft: { policy: policyYaml(false) }, timestamp_from: 0, timestamp_to: 1 }),
      );
      if (build.result.replayed !== 0) fail("an empty window replayed something");
      ctx.log(`engines built in ${fmt(build.ms)} ms`);
      ctx.log(`engine: ${fmt(engineRate)} checks/s`);

      const runs: Record<string, Run> = {};
      for (const distinct of [false, true]) {
        let logged = 0;
        for (const size of windows) {
          // Each window is the whole log so far: log up to `size` decisions, then replay the last hour.
          logged = await logChecks(bench.store, env.id, logged, size, distinct);
          const run = () =>
            replay.replay(scope, {
              draft: { policy: policyYaml(false) },
              timestamp_from: Math.floor(Date.now() / 1000) - 3600,
              limit: 100,
            });
          const m = await measure(run);
          const live = await liveHeap(run);
          const flipped = m.result.flipped;
          if (m.result.replayed !== size) fail(`replayed ${m.result.replayed} of ${size}`);
          if (flipped !== flipsIn(0, size)) fail(`${size}: ${flipped} flips, not ${flipsIn(0, size)}`);
          const name = `${distinct ? "distinct" : "repeated"}_${size}`;
          runs[name] = {
            decisions: size,
            ms: m.ms,
            decisions_per_s: (size / m.ms) * 1000,
            peak_heap_mb: m.peak_heap_mb,
            live_heap_mb: live,
            peak_rss_mb: m.peak_rss_mb,
            longest_stall_ms: m.longest_stall_ms,
            flipped,
          };
          ctx.log(
            `${name}: ${fmt(runs[name]!.decisions_per_s)} decisions/s, ${fmt(m.ms)} ms, heap +${m.peak_heap_mb.toFixed(0)} MB, live +${live.toFixed(0)} MB`,
          );
        }
        await bench.store.db.deleteFrom("decision_log_chunks").execute();
      }
      ctx.table({
        title: "What-if replay of the decision log, in process (SQLite, reader thread)",
        columns: [
          "window",
          "checks",
          "decisions/s",
          "x engine check rate",
          "seconds",
          "peak heap (MB)",
          "live heap (MB)",
          "peak RSS (MB)",
          "longest stall (ms)",
        ],
        rows: Object.entries(runs).map(([name, r]) => [
          name.startsWith("distinct")
            ? "every check distinct (no memo)"
            : "10,000 users x 3 actions (log repeats)",
          fmt(r.decisions),
          fmt(r.decisions_per_s),
          (r.decisions_per_s / engineRate).toFixed(2),
          (r.ms / 1000).toFixed(1),
          r.peak_heap_mb.toFixed(0),
          r.live_heap_mb.toFixed(0),
          r.peak_rss_mb.toFixed(0),
          r.longest_stall_ms.toFixed(0),
        ]),
        notes: [
          `Baseline: ${fmt(engineRate)} plain engine checks/s on the same checks (one engine, no log, no draft). A replay decides each distinct check twice (environment and draft) and reads and parses the log; checks the log repeats are decided once (a memo of 100,000). Memory is above the process before the run: peak heap and RSS sampled every 20 ms (garbage included: the collector runs when it likes), live heap after a full collection every 100 ms in a second, untimed run; bounded means the live heap does not grow with the window.`,
          `Building both engines (an empty window) took ${fmt(build.ms)} ms, part of every run.`,
        ],
      });
      return { engine_checks_per_s: engineRate, build_ms: build.ms, runs };
    } finally {
      await reader.destroy();
      await app.close();
      await bench.store.close();
    }
  },
  goals(data) {
    const big = data && (data.runs["distinct_1000000"] ?? data.runs["distinct_100000"]);
    const small = data && (data.runs["distinct_100000"] ?? data.runs["distinct_10000"]);
    return [
      judge(
        "replay at least 100,000 logged decisions/s in process",
        big && big.decisions_per_s >= 100_000,
        big ? `${fmt(big.decisions_per_s)}/s` : "-",
      ),
      judge(
        "a 1M-decision window in under 30 s",
        data?.runs["distinct_1000000"] && data.runs["distinct_1000000"].ms < 30_000,
        big ? `${(big.ms / 1000).toFixed(1)} s` : "-",
      ),
      judge(
        "replay memory bounded: 10x the window, under 2x the live heap",
        big && small && big.live_heap_mb < Math.max(2 * small.live_heap_mb, small.live_heap_mb + 32),
        big && small
          ? `live heap ${small.live_heap_mb.toFixed(0)} -> ${big.live_heap_mb.toFixed(0)} MB`
          : "-",
      ),
    ];
  },
};

/** Plain engine checks per second on the environment's own engine (built as the replay builds it). */
async function engineCheckRate(
  store: Parameters<typeof createPolicyReplay>[0]["store"],
  scope: EnvScope,
): Promise<number> {
  const { snapshotPages } = await import("../../src/domain/snapshot-stream.ts");
  const snapshot = await snapshotPages(store, scope.environment.id);
  const engine = createEngine();
  for await (const page of snapshot.pages) engine.loadPage(page);
  const checks = Array.from({ length: 30_000 }, (_, i) => checkOf(i, false));
  let n = 0;
  const started = performance.now();
  while (performance.now() - started < 2000) {
    for (const c of checks) engine.check(c);
    n += checks.length;
  }
  return (n / (performance.now() - started)) * 1000;
}

/** Logs checks `from` to `to` as the PDP's logger does (chunks of 1,000), decided by nothing: all allowed. */
async function logChecks(
  store: Parameters<typeof createPolicyReplay>[0]["store"],
  environmentId: string,
  from: number,
  to: number,
  distinct: boolean,
): Promise<number> {
  const pending: DecisionLogChunk[] = [];
  const logger = createDecisionLogger({
    pdpId: "00000000-0000-7000-8000-00000000bead",
    sink: async (chunk) => void pending.push(chunk),
    flushIntervalMs: 60_000,
  });
  for (let i = from; i < to; i++) {
    const c = checkOf(i, distinct);
    logger.record(
      { environmentId },
      {
        query: "check",
        user_key: c.user.key,
        action: c.action,
        resource_type: c.resource.type,
        tenant: c.resource.tenant,
        decision: true,
        reason: { kind: "rbac", role: "viewer", tenant: c.resource.tenant },
        ...(distinct && { input: c }),
        revision: 1,
        latency_us: 3,
      },
    );
    // The logger ships its chunks between turns of the loop, and drops the oldest past its queue's bound.
    if (i % 1000 === 999) {
      await new Promise((resolve) => setImmediate(resolve));
      for (const chunk of pending.splice(0)) await insertDecisionLogChunk(store.db, "sqlite", chunk, now());
    }
  }
  await logger.close();
  if (logger.dropped > 0) fail(`the logger dropped ${logger.dropped} decisions`);
  for (const chunk of pending.splice(0)) await insertDecisionLogChunk(store.db, "sqlite", chunk, now());
  return to;
}
