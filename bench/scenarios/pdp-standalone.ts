import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { createBigSchema, seedBigEnvironment, TENANTS } from "../lib/big-env.ts";
import { settings } from "../lib/config.ts";
import { Api, latencyRow, percentile } from "../lib/http.ts";
import {
  BOOTSTRAP_KEY,
  sleep,
  startGatehouse,
  startStandalonePdp,
  type Gatehouse,
  type Proc,
} from "../lib/procs.ts";
import { fmt } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { FACTS } from "../lib/seed.ts";
import { runEngineWorker } from "../lib/worker.ts";

const MB = 1024 * 1024;

/** A standalone PDP's start on one environment size. */
export interface StartResult {
  facts: number;
  seed_ms: number;
  ready_ms: number;
  peak_rss_bytes: number;
  /** RSS once it settled after the load, with some checks answered. */
  steady_rss_bytes: number;
  /** (steady RSS - an empty environment's PDP's RSS) / facts. */
  rss_bytes_per_fact: number;
}

export interface PdpStandaloneData {
  empty_pdp_rss_bytes: number;
  follow: StartResult & {
    writes: number;
    visible_ms: { p50: number; p90: number; p99: number; max: number };
    ack_ms: { p50: number; p99: number };
    polls_per_write: number;
    checks: number;
  };
  start: StartResult & { checks: number };
  engine: { facts: number; build_ms: number; rss_bytes: number; rss_bytes_per_fact: number };
}

const kb = (pid: number | undefined, field: string) => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
};

/** RSS once it stops moving (under 1% in 2 s), or after 20 s. */
async function settledRss(proc: Proc): Promise<number> {
  let last = kb(proc.child.pid, "VmRSS");
  for (let i = 0; i < 10; i++) {
    await sleep(2000);
    const now = kb(proc.child.pid, "VmRSS");
    if (Math.abs(now - last) < last * 0.01) return now;
    last = now;
  }
  return last;
}

const loadAvg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** Checks whose answers follow from the seeding: user-i reads folders in tenant t(i % 1000) and in no other. */
function checker(pdp: Api) {
  let count = 0;
  const allowed = async (user: number, tenant: number) => {
    count++;
    const reply = await pdp.call("POST", "/allowed", {
      user: { key: `user-${user}` },
      action: "read",
      resource: { type: "folder", tenant: `t${tenant}` },
    });
    return reply.json.allow as boolean;
  };
  return {
    allowed,
    get count() {
      return count;
    },
    /** The seeded answers of `user`: allowed at home, denied next door. */
    async verify(user: number) {
      if (!(await allowed(user, user % TENANTS))) fail(`user-${user} is denied in its own tenant`);
      if (await allowed(user, (user + 1) % TENANTS))
        fail(`user-${user} is allowed in a tenant it has no role in`);
    },
  };
}

/** A control plane whose production environment holds `facts` seeded facts, and its environment key. */
async function seededControlPlane(
  ctx: Context,
  prefix: string,
  facts: number,
  onEmpty?: (cp: Gatehouse, key: string) => Promise<void>,
) {
  const dataDir = ctx.res.tempDir(prefix);
  let cp = await startGatehouse(ctx.res, { dataDir, pdp: false });
  const admin = new Api(cp.apiUrl, BOOTSTRAP_KEY);
  await createBigSchema(admin);
  const key = (await admin.call("GET", "/v2/api-key/default/production")).json.secret as string;
  if (onEmpty) await onEmpty(cp, key);
  await cp.proc.stop();
  const t0 = performance.now();
  const seeded = seedBigEnvironment(dataDir, "production", facts);
  const seedMs = performance.now() - t0;
  ctx.log(`seeded ${fmt(seeded.facts)} facts in ${fmt(seedMs / 1000, 1)} s`);
  cp = await startGatehouse(ctx.res, { dataDir, pdp: false });
  return { cp, key, seeded, seedMs };
}

/** Starts a standalone PDP and measures its start: time to ready, peak RSS, RSS once settled after `warm`. */
async function startMeasured(ctx: Context, cp: Gatehouse, key: string, prefix: string) {
  const dataDir = ctx.res.tempDir(prefix);
  const t0 = performance.now();
  const pdp = await startStandalonePdp(ctx.res, {
    controlPlane: cp.apiUrl,
    apiKey: key,
    dataDir,
    readyTimeoutMs: 600_000,
  });
  const readyMs = performance.now() - t0;
  return { pdp, dataDir, readyMs, peak: () => kb(pdp.proc.child.pid, "VmHWM") };
}

export const pdpStandaloneScenario: Scenario<PdpStandaloneData> = {
  name: "pdp-standalone",
  description:
    "Does a standalone PDP start and follow a large environment? Environments seeded straight into the control plane's SQLite file " +
    "(3/10 users, 3/10 role assignments, 2/10 resource instances, 2/10 tuples, 1,000 tenants). At 1M facts: a `gatehouse pdp` starts, then " +
    "hundreds of role assignments through the API, each polled on the PDP until allowed (p50/p99/max from the acknowledgement), every answer checked. " +
    "At 5M facts: time to ready, peak and settled RSS, RSS per fact against the engine's own at the same data (built from the PDP's snapshot file in a fresh process).",
  async run(ctx: Context): Promise<PdpStandaloneData> {
    const { followFacts, startFacts, writes } = settings.standalone;

    // 1. Following an environment of followFacts facts; an empty environment's PDP gives the RSS baseline.
    let emptyRss = 0;
    const follow = await seededControlPlane(ctx, "sa-follow-cp", followFacts, async (cp, key) => {
      const empty = await startMeasured(ctx, cp, key, "sa-empty-pdp");
      const check = checker(new Api(empty.pdp.url, key));
      for (let i = 0; i < 200; i++) if (await check.allowed(i, i % TENANTS)) fail("an empty PDP allowed");
      emptyRss = await settledRss(empty.pdp.proc);
      await empty.pdp.proc.stop();
    });
    const users = follow.seeded.users;
    const f = await startMeasured(ctx, follow.cp, follow.key, "sa-follow-pdp");
    const followPeak = f.peak();
    const pdp = new Api(f.pdp.url, follow.key);
    const check = checker(pdp);
    for (let i = 0; i < 500; i++) await check.verify((i * 7919) % users);
    const followSteady = await settledRss(f.pdp.proc);
    ctx.log(
      `${fmt(follow.seeded.facts)} facts: PDP ready in ${fmt(f.readyMs / 1000, 1)} s, peak ${fmt(followPeak / MB)} MB, settled ${fmt(followSteady / MB)} MB (load ${loadAvg()})`,
    );

    const api = new Api(follow.cp.apiUrl, follow.key);
    const visible: number[] = [];
    const acks: number[] = [];
    let polls = 0;
    for (let w = 0; w < writes; w++) {
      const user = (w * 104_729 + 13) % users;
      const tenant = (user + TENANTS / 2) % TENANTS;
      if (await check.allowed(user, tenant)) fail(`user-${user} is allowed in t${tenant} before its role`);
      const sent = performance.now();
      const res = await api.call("POST", `${FACTS}/role_assignments`, {
        user: `user-${user}`,
        role: "reader",
        tenant: `t${tenant}`,
      });
      const acked = performance.now();
      if (res.status !== 200 && res.status !== 201) fail(`role assignment answered ${res.status}`);
      acks.push(acked - sent);
      for (;;) {
        polls++;
        if (await check.allowed(user, tenant)) break;
        if (performance.now() - acked > 10_000) fail(`user-${user}'s role did not reach the PDP within 10 s`);
      }
      visible.push(performance.now() - acked);
      await check.verify((user + 1) % users);
      await sleep(10);
    }
    ctx.table({
      title: `Write -> standalone PDP at ${fmt(follow.seeded.facts)} facts (${writes} role assignments, one at a time)`,
      columns: ["measure", "p50", "p90", "p99", "max"],
      rows: [
        latencyRow("write acknowledged -> allowed by the PDP", visible),
        latencyRow("the write itself (POST role_assignments)", acks),
      ],
      notes: [
        `polled with /allowed right after the acknowledgement (${fmt(polls / writes, 1)} checks per write); every write is checked denied before, and two seeded answers after (${fmt(check.count)} checks in all, load average ${loadAvg()}).`,
      ],
    });
    await f.pdp.proc.stop();
    await follow.cp.proc.stop();

    // 2. Starting on startFacts facts, and the engine alone on the same data.
    const big = await seededControlPlane(ctx, "sa-start-cp", startFacts);
    const s = await startMeasured(ctx, big.cp, big.key, "sa-start-pdp");
    const startPeak = s.peak();
    const bigCheck = checker(new Api(s.pdp.url, big.key));
    for (let i = 0; i < 500; i++) await bigCheck.verify((i * 7919) % big.seeded.users);
    const startSteady = await settledRss(s.pdp.proc);
    ctx.log(
      `${fmt(big.seeded.facts)} facts: PDP ready in ${fmt(s.readyMs / 1000, 1)} s, peak ${fmt(startPeak / MB)} MB, settled ${fmt(startSteady / MB)} MB (load ${loadAvg()})`,
    );
    await s.pdp.proc.stop();
    await big.cp.proc.stop();
    const engine = (await runEngineWorker({
      mode: "snapshot",
      file: path.join(s.dataDir, "pdp-snapshot.ndjson"),
    })) as unknown as PdpStandaloneData["engine"];
    if (engine.facts !== big.seeded.facts)
      fail(`the PDP's snapshot holds ${engine.facts} facts, not ${big.seeded.facts}`);

    const perFact = (rss: number, facts: number) => (rss - emptyRss) / facts;
    const result: PdpStandaloneData = {
      empty_pdp_rss_bytes: emptyRss,
      follow: {
        facts: follow.seeded.facts,
        seed_ms: follow.seedMs,
        ready_ms: f.readyMs,
        peak_rss_bytes: followPeak,
        steady_rss_bytes: followSteady,
        rss_bytes_per_fact: perFact(followSteady, follow.seeded.facts),
        writes,
        visible_ms: {
          p50: percentile(visible, 50),
          p90: percentile(visible, 90),
          p99: percentile(visible, 99),
          max: Math.max(...visible),
        },
        ack_ms: { p50: percentile(acks, 50), p99: percentile(acks, 99) },
        polls_per_write: polls / writes,
        checks: check.count,
      },
      start: {
        facts: big.seeded.facts,
        seed_ms: big.seedMs,
        ready_ms: s.readyMs,
        peak_rss_bytes: startPeak,
        steady_rss_bytes: startSteady,
        rss_bytes_per_fact: perFact(startSteady, big.seeded.facts),
        checks: bigCheck.count,
      },
      engine,
    };
    const startRow = (r: StartResult) => [
      fmt(r.facts),
      `${fmt(r.ready_ms / 1000, 1)} s`,
      `${fmt(r.peak_rss_bytes / MB)} MB`,
      `${fmt(r.steady_rss_bytes / MB)} MB`,
      fmt(r.rss_bytes_per_fact),
    ];
    ctx.table({
      title: "Standalone PDP start",
      columns: ["facts", "ready in", "peak RSS", "settled RSS", "RSS bytes/fact"],
      rows: [
        startRow(result.follow),
        startRow(result.start),
        [
          fmt(engine.facts),
          `engine from the file ${fmt(engine.build_ms / 1000, 1)} s`,
          "-",
          `+${fmt(engine.rss_bytes / MB)} MB`,
          fmt(engine.rss_bytes_per_fact),
        ],
      ],
      notes: [
        `bytes/fact = (settled RSS - ${fmt(emptyRss / MB)} MB, a PDP on an empty environment) / facts; settled = RSS still within 1% over 2 s after 1,000 checked answers.`,
        "engine = built page by page from the PDP's own snapshot file (read, parsed and loaded as the PDP does) in a fresh process (--expose-gc), RSS retained after a full GC.",
      ],
    });
    return result;
  },
  goals: (data) => [
    judge(
      "Standalone PDP starts at 5M facts with RSS per fact at most 1.5x the engine's",
      data && data.start.facts >= 5_000_000
        ? data.start.rss_bytes_per_fact <= 1.5 * data.engine.rss_bytes_per_fact
        : undefined,
      `${fmt(data?.start.rss_bytes_per_fact)} B/fact against the engine's ${fmt(data?.engine.rss_bytes_per_fact)} at ${fmt(data?.start.facts)} facts, ready in ${fmt((data?.start.ready_ms ?? 0) / 1000, 1)} s`,
    ),
    judge(
      "Write -> standalone PDP p99 at most 50 ms at 1M facts",
      data && data.follow.facts >= 1_000_000 ? data.follow.visible_ms.p99 <= 50 : undefined,
      `p99 ${fmt(data?.follow.visible_ms.p99, 1)} ms, p50 ${fmt(data?.follow.visible_ms.p50, 1)} ms, max ${fmt(data?.follow.visible_ms.max, 1)} ms at ${fmt(data?.follow.facts)} facts`,
    ),
  ],
};
