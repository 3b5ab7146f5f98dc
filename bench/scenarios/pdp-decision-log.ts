import { settings } from "../lib/config.ts";
import { loopShares, monotonicUs, type LoopShares } from "../lib/cpu-profile.ts";
import { Api } from "../lib/http.ts";
import { allowedPlan, sampler, seededPdp } from "../lib/pdp-setup.ts";
import { abServerMode, cpuTimes, startGatehouse } from "../lib/procs.ts";
import { fmt, ms } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { meanInterval, signedPercent, withInterval, type Interval } from "../lib/stats.ts";
import { combine, runWrk, type WrkResult } from "../lib/wrk.ts";

export const LOG_MODES = ["on", "off"] as const;
export type LogMode = (typeof LOG_MODES)[number];
/** In the order they are loaded. */
export const CONCURRENCIES = [64, 1] as const;
/** The logger's module, whose frames the profile counts. */
const LOGGER_MODULE = "/src/pdp/runtime/decision-log.ts";

/** One slice of the load: its figures and the CPU time the server spent on it. */
interface Slice {
  load: WrkResult;
  mainUs: number;
  processUs: number;
}

/** The figures of one side (log on or off) at one concurrency, over all its slices. */
interface SideSummary {
  slices: number;
  main_cpu_us: number;
  process_cpu_us: number;
  rps: number;
  p50_us: number;
  p99_us: number;
}

/** What the log costs at one concurrency: its on servers against its off servers, block by block. */
export interface LogCost {
  blocks: number;
  on: SideSummary;
  off: SideSummary;
  main_cpu_extra: Interval;
  process_cpu_extra: Interval;
  p50_extra: Interval;
  throughput_extra: Interval;
}

export interface PdpDecisionLogData {
  by_concurrency: Record<number, LogCost>;
  profile: {
    concurrency: number;
    on: LoopShares;
    off: LoopShares;
    /** The log's share of the loop's work: its own code, and the collector's work beyond the log-off server's. */
    log_share: number;
  };
}

/** CPU time per request of slices together (µs): on the event loop, or in all the process's threads. */
const cpuPerRequest = (slices: Slice[], clock: "mainUs" | "processUs") =>
  slices.reduce((sum, slice) => sum + slice[clock], 0) /
  slices.reduce((sum, slice) => sum + slice.load.requests, 0);

/**
 * Servers started with GATEHOUSE_DECISION_LOG=on and =off, one at a time over the same seeded database, in the
 * order on, off, off, on, and so on, so that drift in the machine's speed hits both alike; each pair is a block.
 * Processes alike run up to 10% apart, so each block's figure carries that spread and the interval shows it.
 */
export async function runAb(
  ctx: Context,
  setup: Awaited<ReturnType<typeof seededPdp>>,
  envOf: (mode: LogMode) => Record<string, string> = (mode) => ({ GATEHOUSE_DECISION_LOG: mode }),
) {
  const { abPairs, abSlices, abSeconds } = settings.pdp;
  const checks = setup.dataset.checks.rbac;
  const blocks = Object.fromEntries(CONCURRENCIES.map((concurrency) => [concurrency, []])) as Record<
    number,
    Record<LogMode, Slice[]>[]
  >;
  const problems: string[] = [];
  for (let serverIndex = 0; serverIndex < 2 * abPairs; serverIndex++) {
    const mode = abServerMode(serverIndex);
    const server = await startGatehouse(ctx.res, {
      dataDir: setup.dataDir,
      pdp: true,
      env: envOf(mode),
    });
    const url = server.pdpUrl as string;
    const plan = allowedPlan(url, setup.envKey, checks, "pdp", "rbac");
    const api = new Api(url, setup.envKey);
    // One check first, without wrk's 2 s timeout: the server loads the environment on it (seconds on a loaded
    // machine, which left a warm-up with no request completed).
    const first = checks[0] as (typeof checks)[number];
    const answer = await api.call("POST", "/allowed", first.body);
    if (answer.json?.allow !== first.allow) problems.push(`first check answered ${answer.text}`);
    const check = sampler(api, checks);
    const warm = await runWrk(plan, 16, settings.warmupSeconds, check);
    problems.push(...warm.problems.map((problem) => `warm-up: ${problem}`));
    for (const concurrency of CONCURRENCIES) {
      const block = ((blocks[concurrency] as Record<LogMode, Slice[]>[])[Math.floor(serverIndex / 2)] ??= {
        on: [],
        off: [],
      });
      for (let slice = 0; slice < abSlices; slice++) {
        const pid = server.proc.child.pid;
        const before = cpuTimes(pid);
        const load = await runWrk(plan, concurrency, abSeconds, check);
        const after = cpuTimes(pid);
        if (!before || !after) fail("the A/B reads the server's CPU time from /proc (Linux)");
        problems.push(...load.problems.map((problem) => `log ${mode} c=${concurrency}: ${problem}`));
        block[mode].push({
          load,
          mainUs: after.mainUs - before.mainUs,
          processUs: after.processUs - before.processUs,
        });
      }
    }
    await server.proc.stop();
  }
  if (problems.length > 0) fail(`wrong or failed answers under load:\n  ${problems.join("\n  ")}`);
  return blocks;
}

export function summarize(blocks: Record<LogMode, Slice[]>[]): LogCost {
  const side = (mode: LogMode): SideSummary => {
    const slices = blocks.flatMap((block) => block[mode]);
    const load = combine(slices.map((slice) => slice.load));
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
  const extra = (figure: (slices: Slice[]) => number) =>
    meanInterval(blocks.map((block) => figure(block.on) / figure(block.off) - 1));
  const loadOf = (slices: Slice[]) => combine(slices.map((slice) => slice.load));
  return {
    blocks: blocks.length,
    on: side("on"),
    off: side("off"),
    main_cpu_extra: extra((slices) => cpuPerRequest(slices, "mainUs")),
    process_cpu_extra: extra((slices) => cpuPerRequest(slices, "processUs")),
    p50_extra: extra((slices) => loadOf(slices).latency_us.p50),
    throughput_extra: extra((slices) => loadOf(slices).rps),
  };
}

/**
 * Where the log's time goes inside one process, free of the spread between processes: one server with the log on
 * and one with it off, each profiled (--cpu-prof) through the RBAC load at c=64.
 */
async function profile(ctx: Context, setup: Awaited<ReturnType<typeof seededPdp>>, mode: LogMode) {
  const dir = ctx.res.tempDir(`pdp-profile-${mode}`);
  const server = await startGatehouse(ctx.res, {
    dataDir: setup.dataDir,
    pdp: true,
    env: { GATEHOUSE_DECISION_LOG: mode },
    nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${dir}`],
  });
  const plan = allowedPlan(server.pdpUrl as string, setup.envKey, setup.dataset.checks.rbac, "pdp", "rbac");
  await runWrk(plan, 16, settings.warmupSeconds);
  const from = monotonicUs();
  const load = await runWrk(plan, 64, settings.loadSeconds);
  const to = monotonicUs();
  if (load.problems.length > 0) fail(`profiled server, log ${mode}: ${load.problems.join("; ")}`);
  await server.proc.stop();
  const shares = loopShares(dir, LOGGER_MODULE, from, to);
  ctx.log(
    `profiled, log ${mode}: ${fmt(load.rps)} req/s; of the event loop's work, ${(100 * shares.module).toFixed(1)}% in ` +
      `the decision logger, ${(100 * shares.gc).toFixed(1)}% in the garbage collector`,
  );
  return shares;
}

/**
 * The A/B's table rows: at each concurrency the on and the off servers' figures, then on against off (the mean over
 * the blocks with its interval). `processCpu` adds the CPU of the server's other threads.
 */
export function abRows(byConcurrency: Record<number, LogCost>, processCpu: boolean): (string | number)[][] {
  return CONCURRENCIES.flatMap((concurrency) => {
    const cost = byConcurrency[concurrency] as LogCost;
    return [
      ...LOG_MODES.map((mode) => [
        concurrency,
        mode,
        cost[mode].slices,
        fmt(cost[mode].rps),
        ms(cost[mode].p50_us),
        ms(cost[mode].p99_us),
        `${cost[mode].main_cpu_us.toFixed(1)} µs`,
        ...(processCpu ? [`${cost[mode].process_cpu_us.toFixed(1)} µs`] : []),
      ]),
      [
        concurrency,
        "on vs off",
        cost.blocks,
        withInterval(cost.throughput_extra),
        withInterval(cost.p50_extra),
        "",
        withInterval(cost.main_cpu_extra),
        ...(processCpu ? [signedPercent(cost.process_cpu_extra.estimate)] : []),
      ],
    ];
  });
}

export const pdpDecisionLogScenario: Scenario<PdpDecisionLogData> = {
  name: "pdp-decision-log",
  description:
    "What does the decision log cost a check? RBAC checks on servers started with the log on against servers " +
    "with it off (an interleaved A/B over blocks, with a 95% interval), and the logger's share of one profiled process.",
  async run(ctx: Context): Promise<PdpDecisionLogData> {
    const setup = await seededPdp(ctx);
    await setup.server.proc.stop();
    const blocks = await runAb(ctx, setup);
    const byConcurrency = Object.fromEntries(
      Object.entries(blocks).map(([concurrency, of]) => [concurrency, summarize(of)]),
    ) as Record<number, LogCost>;
    const on = await profile(ctx, setup, "on");
    const off = await profile(ctx, setup, "off");
    const { abPairs, abSlices, abSeconds } = settings.pdp;
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
      rows: abRows(byConcurrency, true),
      notes: [
        `${2 * abPairs} servers over the same database, started one at a time with the log on, off, off, on, and so on (each pair a block); each warmed up (${settings.warmupSeconds} s at c=16), then ${abSlices} slices of ${abSeconds} s at c=64 and at c=1.`,
        "on vs off: per block, the on server's slices against the off server's; the mean over the blocks with a 95% bootstrap interval.",
        "event loop CPU: the server's main thread, where checks are answered; process CPU adds its other threads (the log's SQLite writer, the collector's helpers).",
      ],
    });
    const share = (fraction: number) => `${(100 * fraction).toFixed(1)}%`;
    ctx.table({
      title: "Decision log in the profile of one process (RBAC, c=64)",
      columns: ["log", "decision logger", "garbage collector", "busy samples"],
      rows: [
        ["on", share(on.module), share(on.gc), fmt(on.busySamples)],
        ["off", share(off.module), share(off.gc), fmt(off.busySamples)],
      ],
      notes: [
        `Shares of the samples in which the event loop was at work during ${settings.loadSeconds} s of load; "decision logger": a frame of ${LOGGER_MODULE} on the stack, what it calls included.`,
      ],
    });
    return {
      by_concurrency: byConcurrency,
      profile: { concurrency: 64, on, off, log_share: on.module + Math.max(0, on.gc - off.gc) },
    };
  },
  goals(data) {
    // A figure counts against the goal when it is beyond 5% and its interval lies above zero; the profile, which
    // counts the logger's own work only, has to be within 5% in any case.
    const within = (cost: Interval) => cost.estimate <= 0.05 || cost.low <= 0;
    const costs = Object.entries(data?.by_concurrency ?? {});
    const atOne = data?.by_concurrency[1];
    return [
      judge(
        "The decision log slows a check by at most 5% (its share of the loop's work in one profiled process; in the A/B, event-loop CPU per check and p50 at c=1, unless the 95% interval reaches zero)",
        data && atOne
          ? costs.every(([, cost]) => within(cost.main_cpu_extra)) &&
              within(atOne.p50_extra) &&
              data.profile.log_share <= 0.05
          : undefined,
        `profile: ${(100 * (data?.profile.log_share ?? 0)).toFixed(1)}% of the loop's work; ` +
          costs
            .map(
              ([concurrency, cost]) =>
                `c=${concurrency}: event loop ${withInterval(cost.main_cpu_extra)}, p50 ${withInterval(cost.p50_extra)}`,
            )
            .join("; "),
      ),
    ];
  },
};
