import http from "node:http";
import type { AddressInfo } from "node:net";
import { settings } from "../lib/config.ts";
import { Api } from "../lib/http.ts";
import { freshPgSchema, pgReachable } from "../lib/pg.ts";
import { abServerMode, BOOTSTRAP_KEY, sleep, startGatehouse } from "../lib/procs.ts";
import { fmt, ms } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { FACTS } from "../lib/seed.ts";
import { meanInterval, withInterval, type Interval } from "../lib/stats.ts";
import { combine, runWrk, type WrkPlan, type WrkResult } from "../lib/wrk.ts";

/** Blocks of the A/B; each block is one slice with the webhook on and one with it off. */
const BLOCKS = 8;

interface DialectResult {
  dialect: string;
  off: WrkResult;
  on: WrkResult;
  overhead: Interval;
  delivered: number;
}

export interface WebhooksData {
  dialects: {
    dialect: string;
    off_rps: number;
    on_rps: number;
    overhead: number;
    overhead_interval: [number, number];
    delivered: number;
  }[];
}

/** A receiver in this process that answers every delivery 204 and counts them. */
export async function startReceiver() {
  let count = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      count++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The default environment's webhook for every facts event, to `url`. */
export const subscribeToFacts = (api: Api, url: string) =>
  api.call("POST", "/v2/webhooks", {
    url,
    events: ["facts.*"],
    project_id: "default",
    environment_id: "production",
  });

/** Single user creations; `{n}` counts from 0 in every load, so each load creates users of its own prefix. */
export const createUsersPlan = (url: string, prefix: string): WrkPlan => ({
  url,
  mode: "status",
  statuses: [201],
  headers: { authorization: `Bearer ${BOOTSTRAP_KEY}`, "content-type": "application/json" },
  requests: [
    {
      method: "POST",
      path: `${FACTS}/users`,
      template: true,
      body: JSON.stringify({ key: `${prefix}-{n}` }),
    },
  ],
});

/**
 * Single user creations at c=8 on one server, its environment's webhook (every facts event) enabled and disabled in
 * turns (on, off, off, on, ...), so that both states share the process, the database and the machine's drift.
 */
async function runDialect(ctx: Context, dialect: string): Promise<DialectResult> {
  const sizes = settings.controlPlane;
  const dbUrl = dialect === "postgres" ? (await freshPgSchema(ctx.res, settings.pgUrl)).url : undefined;
  const server = await startGatehouse(ctx.res, {
    dataDir: ctx.res.tempDir(`webhooks-${dialect}`),
    ...(dbUrl && { databaseUrl: dbUrl }),
    pdp: false,
    env: { GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
  });
  const receiver = await startReceiver();
  const api = new Api(server.apiUrl, BOOTSTRAP_KEY);
  const hook = await subscribeToFacts(api, receiver.url);
  const setEnabled = (enabled: boolean) => api.call("PATCH", `/v2/webhooks/${hook.json.id}`, { enabled });
  const plan = (prefix: string) => createUsersPlan(server.apiUrl, prefix);
  await runWrk(plan("warmup"), sizes.opConcurrency, settings.warmupSeconds);
  const blocks: Record<"on" | "off", WrkResult[]>[] = [];
  const problems: string[] = [];
  for (let i = 0; i < 2 * BLOCKS; i++) {
    const mode = abServerMode(i);
    await setEnabled(mode === "on");
    await sleep(1000); // the deliveries of the slice before go out before this one
    const load = await runWrk(plan(`slice${i}`), sizes.opConcurrency, sizes.opSeconds);
    problems.push(...load.problems.map((p) => `${dialect} (webhook ${mode}): ${p}`));
    (blocks[Math.floor(i / 2)] ??= { on: [], off: [] })[mode].push(load);
  }
  if (problems.length > 0) fail(`writes under load:\n  ${problems.join("\n  ")}`);
  await sleep(3000);
  const delivered = receiver.count();
  if (delivered === 0) fail(`${dialect}: the webhook received nothing while it was on`);
  await receiver.close();
  await server.proc.stop();
  const all = (mode: "on" | "off") => combine(blocks.flatMap((block) => block[mode]));
  const result = {
    dialect,
    off: all("off"),
    on: all("on"),
    overhead: meanInterval(blocks.map((block) => 1 - combine(block.on).rps / combine(block.off).rps)),
    delivered,
  };
  ctx.log(
    `${dialect}: webhook off ${fmt(result.off.rps)} req/s, on ${fmt(result.on.rps)} req/s; ` +
      `throughput lost per block: ${withInterval(result.overhead)}; ${delivered} deliveries received`,
  );
  return result;
}

export const webhooksScenario: Scenario<WebhooksData> = {
  name: "webhooks",
  description:
    "Single user creations (POST users) at c=8 with the environment's webhook on (every facts event, a local " +
    "receiver answering 204) against off, on one server in alternating slices, per database.",
  async run(ctx) {
    const results: DialectResult[] = [];
    for (const dialect of settings.controlPlane.dialects) {
      if (dialect === "postgres") {
        const problem = await pgReachable(settings.pgUrl);
        if (problem) {
          ctx.note(`PostgreSQL NOT RUN: ${settings.pgUrl} is not reachable (${problem})`);
          continue;
        }
      }
      results.push(await runDialect(ctx, dialect));
    }
    ctx.table({
      title:
        "Webhooks' cost to single writes (c=8; throughput lost: mean over the on/off blocks, 95% interval)",
      columns: ["database", "off req/s", "on req/s", "throughput lost", "p50 off", "p50 on", "deliveries"],
      rows: results.map((r) => [
        r.dialect,
        fmt(r.off.rps),
        fmt(r.on.rps),
        withInterval(r.overhead),
        ms(r.off.latency_us.p50),
        ms(r.on.latency_us.p50),
        fmt(r.delivered),
      ]),
    });
    return {
      dialects: results.map((r) => ({
        dialect: r.dialect,
        off_rps: Math.round(r.off.rps),
        on_rps: Math.round(r.on.rps),
        overhead: r.overhead.estimate,
        overhead_interval: [r.overhead.low, r.overhead.high],
        delivered: r.delivered,
      })),
    };
  },
  goals(data) {
    const rows = data?.dialects ?? [];
    const worst = Math.max(...rows.map((r) => r.overhead));
    return [
      judge(
        "Webhooks on: single writes lose at most 5% throughput at c=8",
        rows.length === 0 ? undefined : worst <= 0.05,
        rows.map((r) => `${(r.overhead * 100).toFixed(1)}% (${r.dialect})`).join("; "),
      ),
    ];
  },
};
