import { settings } from "../lib/config.ts";
import { cerbosBinary, cerbosPolicies, startCerbos } from "../lib/cerbos.ts";
import { Api, pool } from "../lib/http.ts";
import { buildPdpDataset, TENANT_ROLES, type Check, type RbacCheck } from "../lib/pdp-dataset.ts";
import { loopShares, monotonicUs, type LoopShares } from "../lib/cpu-profile.ts";
import {
  abServerMode,
  BOOTSTRAP_KEY,
  cpuTimes,
  freePort,
  sleep,
  startGatehouse,
  waitReady,
} from "../lib/procs.ts";
import { fmt, ms, ratio } from "../lib/report.ts";
import { fail, type Context, type Scenario } from "../lib/scenario.ts";
import { seedPdpDataset } from "../lib/seed.ts";
import { meanInterval, signedPercent, withInterval } from "../lib/stats.ts";
import { combine, runWrk, type WrkPlan, type WrkResult } from "../lib/wrk.ts";

const AB_MODES = ["on", "off"] as const;
type AbMode = (typeof AB_MODES)[number];
/** In the order they are loaded; results list them by number. */
const AB_CONCURRENCIES = [64, 1] as const;
/** One slice of the decision log's A/B: the load's figures and the CPU time its server spent on it. */
interface AbSlice {
  load: WrkResult;
  mainUs: number;
  processUs: number;
}
/** The CPU time per request of slices together (µs): on the event loop, or in all the process's threads. */
const cpuPerRequest = (slices: AbSlice[], k: "mainUs" | "processUs") =>
  slices.reduce((n, x) => n + x[k], 0) / slices.reduce((n, x) => n + x.load.requests, 0);

type Target = "bare" | "bare-bulk" | "rbac" | "cerbos" | "rebac1" | "rebac3" | "abac" | "bulk";

const LABEL: Record<Target, string> = {
  bare: "bare node:http (/allowed bodies)",
  "bare-bulk": "bare node:http (bulk bodies)",
  rbac: "RBAC",
  cerbos: "Cerbos RBAC",
  rebac1: "ReBAC depth 1",
  rebac3: "ReBAC depth 3",
  abac: "ABAC",
  bulk: "/allowed/bulk x100 (RBAC)",
};

const cerbosBody = (c: RbacCheck, i: number) =>
  JSON.stringify({
    requestId: "",
    principal: { id: c.body.user.key, roles: ["user"], attr: { tenant_roles: c.tenantRoles } },
    resources: [
      {
        actions: [c.body.action],
        resource: { kind: "document", id: `c${i + 1}`, attr: { tenant: c.body.resource.tenant } },
      },
    ],
  });

/** Sends one check of `checks` every 50 ms while the load runs and fails on a wrong decision. */
function sampler(pdp: Api, checks: Check[], path = "/allowed") {
  return async (signal: AbortSignal) => {
    let i = 0;
    while (!signal.aborted) {
      const c = checks[i++ % checks.length] as Check;
      const r = await pdp.call("POST", path, c.body);
      if (r.json?.allow !== c.allow)
        throw new Error(
          `under load, ${JSON.stringify(c.body)} answered ${r.text}; expected allow=${c.allow}`,
        );
      await sleep(50);
    }
  };
}

export const pdpScenario: Scenario = {
  name: "pdp",
  description:
    "PDP decisions over HTTP (gatehouse serve's PDP port) at concurrency 1, 8 and 64: RBAC (10,000 users in 100 tenants), " +
    "ReBAC depth 1 and 3, ABAC, /allowed/bulk with 100 checks; beside a bare node:http server and Cerbos.",
  async run(ctx: Context) {
    const o = settings.pdp;
    const d = buildPdpDataset(o);
    const dataDir = ctx.res.tempDir("pdp");
    const gh = await startGatehouse(ctx.res, { dataDir, pdp: true });
    const api = new Api(gh.apiUrl, BOOTSTRAP_KEY);
    const seedStart = Date.now();
    await seedPdpDataset(api, d, (m) => ctx.log(`seeded ${m}`));
    const seedS = (Date.now() - seedStart) / 1000;
    ctx.log(`seeding through the API took ${seedS.toFixed(1)} s`);
    const envKey = (await api.call("GET", "/v2/api-key/default/production")).json.secret as string;
    const pdpUrl = gh.pdpUrl as string;
    const pdp = new Api(pdpUrl, envKey);

    // Every prepared check once, before any load: a wrong answer fails the run here.
    const kinds = {
      rbac: d.checks.rbac,
      rebac1: d.checks.rebac1,
      rebac3: d.checks.rebac3,
      abac: d.checks.abac,
    } as const;
    const expectKind = { rbac: "rbac", rebac1: "rebac", rebac3: "rebac", abac: "abac" } as const;
    for (const [name, checks] of Object.entries(kinds)) {
      const wrong: string[] = [];
      await pool(checks, 8, async (c) => {
        const r = await pdp.call("POST", "/allowed", c.body);
        const kind = r.json?.debug?.reason?.kind;
        if (r.json?.allow !== c.allow || (c.allow && kind !== expectKind[name as keyof typeof expectKind])) {
          wrong.push(`${JSON.stringify(c.body)} -> ${r.text}`);
        }
      });
      if (wrong.length > 0) fail(`${name}: ${wrong.length} wrong decisions, e.g. ${wrong[0]}`);
      const allows = checks.filter((c) => c.allow).length;
      ctx.log(`${name}: ${checks.length} checks verified (${allows} allow, ${checks.length - allows} deny)`);
    }
    for (const b of d.bulk) {
      const r = await pdp.call("POST", "/allowed/bulk", b.checks);
      const got = (r.json.allow as { allow: boolean }[]).map((x) => (x.allow ? "1" : "0")).join("");
      if (got !== b.pattern) fail(`/allowed/bulk answered ${got}, expected ${b.pattern}`);
    }

    // The bare baseline and the peer.
    const barePort = await freePort();
    const bareProc = ctx.res.spawn("baseline", process.execPath, [
      "--import",
      "tsx",
      "bench/lib/baseline-server.ts",
      String(barePort),
    ]);
    const bareUrl = `http://127.0.0.1:${barePort}`;
    await waitReady(bareProc, `${bareUrl}/`);

    const bin = cerbosBinary();
    let cerbosUrl: string | undefined;
    let cerbosVersion: string | undefined;
    let cerbosMissing: string | undefined;
    if ("missing" in bin) {
      cerbosMissing = bin.missing;
      ctx.note(`CERBOS NOT RUN: ${bin.missing}`);
    } else {
      try {
        const cerbos = await startCerbos(
          ctx.res,
          bin.path,
          bin.version,
          cerbosPolicies(TENANT_ROLES, "document"),
        );
        cerbosUrl = cerbos.url;
        cerbosVersion = cerbos.version;
      } catch (e) {
        cerbosMissing = `Cerbos did not start: ${String(e).slice(0, 500)}`;
        ctx.note(`CERBOS NOT RUN: ${cerbosMissing}`);
      }
    }
    if (cerbosUrl) {
      const wrong: string[] = [];
      await pool(d.checks.rbac, 8, async (c, i) => {
        const res = await fetch(`${cerbosUrl}/api/check/resources`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: cerbosBody(c, i),
        });
        const text = await res.text();
        const effect = JSON.parse(text)?.results?.[0]?.actions?.[c.body.action];
        if ((effect === "EFFECT_ALLOW") !== c.allow) wrong.push(`${cerbosBody(c, i)} -> ${text}`);
      });
      if (wrong.length > 0) fail(`Cerbos: ${wrong.length} answers differ from ours, e.g. ${wrong[0]}`);
      ctx.log(`Cerbos ${cerbosVersion}: ${d.checks.rbac.length} RBAC checks verified`);
    }

    const headers = { "content-type": "application/json", authorization: `Bearer ${envKey}` };
    const single = (url: string, checks: Check[], mode: "pdp" | "none", kind?: string): WrkPlan => ({
      url,
      mode,
      ...(kind && { kind }),
      headers,
      requests: checks.map((c) => ({
        method: "POST",
        path: "/allowed",
        body: JSON.stringify(c.body),
        expect: c.allow ? "1" : "0",
      })),
    });
    const bulkPlan = (url: string, mode: "bulk" | "none"): WrkPlan => ({
      url,
      mode,
      headers,
      requests: d.bulk.map((b) => ({
        method: "POST",
        path: "/allowed/bulk",
        body: JSON.stringify(b.checks),
        expect: b.pattern,
      })),
    });
    const plans: Partial<Record<Target, WrkPlan>> = {
      bare: single(bareUrl, d.checks.rbac, "none"),
      rbac: single(pdpUrl, d.checks.rbac, "pdp", "rbac"),
      rebac1: single(pdpUrl, d.checks.rebac1, "pdp", "rebac"),
      rebac3: single(pdpUrl, d.checks.rebac3, "pdp", "rebac"),
      abac: single(pdpUrl, d.checks.abac, "pdp", "abac"),
      "bare-bulk": bulkPlan(bareUrl, "none"),
      bulk: bulkPlan(pdpUrl, "bulk"),
    };
    if (cerbosUrl) {
      plans.cerbos = {
        url: cerbosUrl,
        mode: "cerbos",
        headers: { "content-type": "application/json" },
        requests: d.checks.rbac.map((c, i) => ({
          method: "POST",
          path: "/api/check/resources",
          body: cerbosBody(c, i),
          expect: c.allow ? "1" : "0",
        })),
      };
    }
    const samplers: Partial<Record<Target, (s: AbortSignal) => Promise<void>>> = {
      rbac: sampler(pdp, d.checks.rbac),
      rebac1: sampler(pdp, d.checks.rebac1),
      rebac3: sampler(pdp, d.checks.rebac3),
      abac: sampler(pdp, d.checks.abac),
    };
    const order: Target[] = ["bare", "rbac", "cerbos", "rebac1", "rebac3", "abac", "bare-bulk", "bulk"];
    const results: Partial<Record<Target, Record<number, WrkResult>>> = {};
    const problems: string[] = [];
    const warmed = new Set<string>();
    // The decision log's cost, first (a backlog of log entries from the other loads would still be written
    // during it). Servers started with GATEHOUSE_DECISION_LOG=on and =off, one at a time after the seeding (so that
    // none carries its history), in the order on, off, off, on, then again, so that drift in the machine's speed
    // hits both alike; each pair of consecutive servers is a block. Processes that do the same work run up to 10%
    // or more apart (a process's memory and code land differently each time): that spread is part of each block's
    // figure, and the interval shows it. Per slice of the RBAC load: the CPU time the server spent per request on
    // its event loop (where checks are answered) and in all its threads (the log's writer thread included),
    // throughput and latency. Each block gives the log's cost (its on server against its off server); the figure is
    // their mean, with a 95% interval from a bootstrap over the blocks.
    const abBlocks = Object.fromEntries(AB_CONCURRENCIES.map((c) => [c, []])) as Record<
      number,
      Record<AbMode, AbSlice[]>[]
    >;
    for (let n = 0; n < 2 * o.abPairs; n++) {
      const mode = abServerMode(n);
      const server = await startGatehouse(ctx.res, {
        dataDir,
        pdp: true,
        env: { GATEHOUSE_DECISION_LOG: mode },
      });
      const url = server.pdpUrl as string;
      const plan = single(url, d.checks.rbac, "pdp", "rbac");
      const check = sampler(new Api(url, envKey), d.checks.rbac);
      const warm = await runWrk(plan, 16, settings.warmupSeconds, check);
      problems.push(...warm.problems.map((p) => `decision log A/B warm-up: ${p}`));
      for (const c of AB_CONCURRENCIES) {
        const blocks = abBlocks[c] as Record<AbMode, AbSlice[]>[];
        const block = (blocks[Math.floor(n / 2)] ??= { on: [], off: [] });
        for (let i = 0; i < o.abSlices; i++) {
          const pid = server.proc.child.pid;
          const before = cpuTimes(pid);
          const load = await runWrk(plan, c, o.abSeconds, check);
          const after = cpuTimes(pid);
          if (!before || !after)
            fail("the decision log's A/B reads the server's CPU time from /proc (Linux)");
          problems.push(...load.problems.map((p) => `decision log ${mode} c=${c}: ${p}`));
          block[mode].push({
            load,
            mainUs: after.mainUs - before.mainUs,
            processUs: after.processUs - before.processUs,
          });
        }
      }
      await server.proc.stop();
    }
    const decisionLog = Object.entries(abBlocks).map(([c, blocks]) => {
      const summary = (mode: AbMode) => {
        const slices = blocks.flatMap((b) => b[mode]);
        const load = combine(slices.map((x) => x.load));
        return {
          slices: slices.length,
          main_cpu_us: cpuPerRequest(slices, "mainUs"),
          process_cpu_us: cpuPerRequest(slices, "processUs"),
          rps: load.rps,
          p50_us: load.latency_us.p50,
          p99_us: load.latency_us.p99,
        };
      };
      // The log's cost in one block: a figure of its on slices against that of its off slices.
      const extra = (figure: (slices: AbSlice[]) => number) =>
        meanInterval(blocks.map((b) => figure(b.on) / figure(b.off) - 1));
      const x = {
        concurrency: Number(c),
        blocks: blocks.length,
        on: summary("on"),
        off: summary("off"),
        main_cpu_extra: extra((xs) => cpuPerRequest(xs, "mainUs")),
        process_cpu_extra: extra((xs) => cpuPerRequest(xs, "processUs")),
        p50_extra: extra((xs) => combine(xs.map((x) => x.load)).latency_us.p50),
        throughput_extra: extra((xs) => combine(xs.map((x) => x.load)).rps),
      };
      ctx.log(
        `decision log c=${c}: event loop per request ${x.on.main_cpu_us.toFixed(1)} µs on, ` +
          `${x.off.main_cpu_us.toFixed(1)} µs off; per block: ${withInterval(x.main_cpu_extra)}`,
      );
      return x;
    });
    // Where the log's time goes inside one process, which the spread between processes does not blur: one more
    // server with the log on and one with it off, each profiled (--cpu-prof) through the RBAC load at c=64; the
    // share of the event loop's work under the logger's module (what it calls included: encoding, sealing,
    // handing chunks to the writer) and in the garbage collector.
    const profiled: Partial<Record<"on" | "off", LoopShares>> = {};
    for (const mode of ["on", "off"] as const) {
      const dir = ctx.res.tempDir(`pdp-profile-${mode}`);
      const server = await startGatehouse(ctx.res, {
        dataDir,
        pdp: true,
        env: { GATEHOUSE_DECISION_LOG: mode },
        nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${dir}`],
      });
      const plan = single(server.pdpUrl as string, d.checks.rbac, "pdp", "rbac");
      await runWrk(plan, 16, settings.warmupSeconds);
      const from = monotonicUs();
      const r = await runWrk(plan, 64, settings.loadSeconds);
      const to = monotonicUs();
      problems.push(...r.problems.map((p) => `profiled server, log ${mode}: ${p}`));
      await server.proc.stop();
      const x = (profiled[mode] = loopShares(dir, "/src/pdp/decision-log.ts", from, to));
      ctx.log(
        `profiled, log ${mode}: ${fmt(r.rps)} req/s; of the event loop's work, ${(100 * x.module).toFixed(1)}% in the ` +
          `decision logger, ${(100 * x.gc).toFixed(1)}% in the garbage collector (${fmt(x.busySamples)} samples)`,
      );
    }

    for (const c of settings.concurrencies) {
      for (const target of order) {
        const plan = plans[target];
        if (!plan) continue;
        if (!warmed.has(target)) {
          warmed.add(target);
          const w = await runWrk(plan, 16, settings.warmupSeconds);
          problems.push(...w.problems.map((p) => `${LABEL[target]} warm-up: ${p}`));
        }
        const r = await runWrk(plan, c, settings.loadSeconds, samplers[target]);
        problems.push(...r.problems.map((p) => `${LABEL[target]} c=${c}: ${p}`));
        (results[target] ??= {})[c] = r;
        ctx.log(
          `${LABEL[target]} c=${c}: ${fmt(r.rps)} req/s, ${fmt(r.decisions_per_s)} decisions/s, p50 ${ms(r.latency_us.p50)}, p99 ${ms(r.latency_us.p99)}`,
        );
      }
    }

    if (problems.length > 0) fail(`wrong or failed answers under load:\n  ${problems.join("\n  ")}`);

    const rows = [];
    for (const target of [
      "rbac",
      "rebac1",
      "rebac3",
      "abac",
      "bulk",
      "cerbos",
      "bare",
      "bare-bulk",
    ] as Target[]) {
      for (const c of settings.concurrencies) {
        const r = results[target]?.[c];
        if (!r) continue;
        const bare = results[target === "bulk" || target === "bare-bulk" ? "bare-bulk" : "bare"]?.[c];
        rows.push([
          LABEL[target],
          c,
          fmt(r.rps),
          fmt(r.decisions_per_s),
          ms(r.latency_us.p50),
          ms(r.latency_us.p95),
          ms(r.latency_us.p99),
          ratio(r.rps, bare?.rps),
          ratio(r.latency_us.p99, bare?.latency_us.p99),
        ]);
      }
    }
    ctx.table({
      title: "PDP over HTTP (wrk, 1 thread; server and load generator are separate processes)",
      columns: [
        "scenario",
        "conc",
        "req/s",
        "decisions/s",
        "p50",
        "p95",
        "p99",
        "req/s vs bare",
        "p99 vs bare",
      ],
      rows,
      notes: [
        `${settings.loadSeconds} s per point after a ${settings.warmupSeconds} s warm-up per target; every answer checked (see docs/benchmarks.md).`,
      ],
    });
    ctx.table({
      title: "Decision log overhead (RBAC; servers started with the log on against servers with it off)",
      columns: [
        "conc",
        "log",
        "slices",
        "req/s",
        "p50",
        "p99",
        "event loop CPU / request",
        "process CPU / request",
      ],
      rows: decisionLog.flatMap((x) => [
        ...AB_MODES.map((mode) => [
          x.concurrency,
          mode,
          x[mode].slices,
          fmt(x[mode].rps),
          ms(x[mode].p50_us),
          ms(x[mode].p99_us),
          `${x[mode].main_cpu_us.toFixed(1)} µs`,
          `${x[mode].process_cpu_us.toFixed(1)} µs`,
        ]),
        [
          x.concurrency,
          "on vs off",
          x.blocks,
          signedPercent(x.throughput_extra.estimate),
          withInterval(x.p50_extra),
          "",
          withInterval(x.main_cpu_extra),
          signedPercent(x.process_cpu_extra.estimate),
        ],
      ]),
      notes: [
        `${2 * o.abPairs} gatehouse serve over the same database, started one at a time after the seeding with GATEHOUSE_DECISION_LOG on, off, off, on, and so on (each pair of them a block); each warmed up (${settings.warmupSeconds} s at c=16), then put through ${o.abSlices} slices of ${o.abSeconds} s at c=64 and then at c=1, then stopped.`,
        "on and off rows: all the slices of one side; CPU per request over all of them, p50 and p99 the median of the slices'.",
        "on vs off: per block, the on server's slices against the off server's; the mean over the blocks (their number in the slices column), with a 95% interval from a bootstrap over the blocks (2,000 draws). The spread between processes alike is part of each block's figure.",
        "event loop CPU: the server's main thread, where checks are answered; process CPU adds its other threads: the decision log's SQLite writer thread and the garbage collector's helpers. On this 2-core machine those threads compete with the load generator for the second core, which the throughput at c=64 shows.",
      ],
    });
    const share = (x: number | undefined) => (x === undefined ? "-" : `${(100 * x).toFixed(1)}%`);
    ctx.table({
      title: "Decision log in the profile of one process (RBAC, c=64)",
      columns: ["log", "decision logger", "garbage collector", "busy samples"],
      rows: (["on", "off"] as const).map((mode) => [
        mode,
        share(profiled[mode]?.module),
        share(profiled[mode]?.gc),
        fmt(profiled[mode]?.busySamples ?? 0),
      ]),
      notes: [
        `Two more gatehouse serve, one with the log on and one off, each run with --cpu-prof through ${settings.loadSeconds} s of the RBAC load at c=64 after a warm-up; the shares are of the samples in which the event loop was at work during the load. "decision logger": a frame of src/pdp/decision-log.ts on the stack (what it calls included: encoding, sealing chunks, handing them to the writer thread). Within one process these shares are free of the spread between processes alike; they leave out what the log costs other code (caches, the writer thread's share of the cores).`,
      ],
    });
    if (cerbosUrl) {
      ctx.table({
        title: `RBAC: Gatehouse vs Cerbos ${cerbosVersion} (same checks, same concurrency)`,
        columns: [
          "conc",
          "gatehouse req/s",
          "p50",
          "p99",
          "cerbos req/s",
          "p50",
          "p99",
          "throughput ratio",
          "bare req/s",
        ],
        rows: settings.concurrencies.map((c) => {
          const g = results.rbac?.[c];
          const x = results.cerbos?.[c];
          return [
            c,
            fmt(g?.rps),
            ms(g?.latency_us.p50),
            ms(g?.latency_us.p99),
            fmt(x?.rps),
            ms(x?.latency_us.p50),
            ms(x?.latency_us.p99),
            ratio(g?.rps, x?.rps),
            fmt(results.bare?.[c]?.rps),
          ];
        }),
        notes: [
          "Cerbos keeps no facts: each request carries the user's roles per tenant (principal attribute), and derived roles pick the resource tenant's.",
        ],
      });
    } else {
      ctx.table({
        title: "RBAC: Gatehouse vs Cerbos",
        columns: ["status"],
        rows: [[`Cerbos was not run: ${cerbosMissing}`]],
      });
    }
    const pick = (r: WrkResult) => ({
      rps: Math.round(r.rps),
      decisions_per_s: Math.round(r.decisions_per_s),
      requests: r.requests,
      seconds: r.seconds,
      latency_us: r.latency_us,
      checks: r.checks,
    });
    ctx.data["seed_seconds"] = seedS;
    ctx.data["decision_log"] = Object.fromEntries(
      decisionLog.map(({ concurrency, ...x }) => [concurrency, x]),
    );
    ctx.data["decision_log_profile"] = {
      concurrency: 64,
      on: profiled.on,
      off: profiled.off,
      // The log's share of the loop's work: its own code, and what the collector does beyond the log-off server.
      log_share:
        profiled.on && profiled.off
          ? profiled.on.module + Math.max(0, profiled.on.gc - profiled.off.gc)
          : undefined,
    };
    ctx.data["cerbos"] = cerbosUrl ? { version: cerbosVersion } : { missing: cerbosMissing };
    ctx.data["results"] = Object.fromEntries(
      Object.entries(results).map(([t, byC]) => [
        t,
        Object.fromEntries(Object.entries(byC).map(([c, r]) => [c, pick(r)])),
      ]),
    );
    ctx.data["dataset"] = {
      users: d.users.length,
      tenants: d.tenants.length,
      tenant_assignments: d.tenantAssignments.length,
      instance_assignments: d.instanceAssignments.length,
      tuples: d.tuples.length,
      checks_per_kind: o.checks,
    };
  },
};
