import { execFileSync, spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { REPO_ROOT, SCALE } from "../lib/config.ts";
import net from "node:net";
import { fmt } from "../lib/report.ts";
import { judge, type Context, type Scenario } from "../lib/scenario.ts";
import { median } from "../lib/stats.ts";

/** What is timed, one after another in each round so that the machine's drift hits every kind alike. */
const KINDS = {
  node: { label: "node -e 0", args: ["-e", "0"] },
  first: { label: "npm start, first start (empty data folder)", args: ["bin/gatehouse.js", "serve"] },
  again: { label: "npm start, next start (existing data)", args: ["bin/gatehouse.js", "serve"] },
  tsx: {
    label: "before: through tsx (node --import tsx src/main.ts)",
    args: ["--import", "tsx", "src/main.ts", "serve"],
  },
  help: { label: "gatehouse help", args: ["bin/gatehouse.js", "help"] },
} as const;
type Kind = keyof typeof KINDS;

export interface StartupData {
  rounds: number;
  /** Milliseconds per round, by kind. */
  ms: Record<Kind, number[]>;
  /** Each round's start time over that round's `node -e 0`. */
  ratio: Record<Exclude<Kind, "node">, { median: number; min: number; max: number }>;
}

/** `count` different ports the OS had free a moment ago (held together, so no two are the same). */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<net.Server>((resolve) => {
          const server = net.createServer();
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as net.AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** Milliseconds from spawn to exit (`node -e 0`, help) or to the line saying the server is running. */
async function timeOne(kind: Kind, dataDir: string): Promise<number> {
  const server = kind === "first" || kind === "again" || kind === "tsx";
  const [api, pdp, opa] = await freePorts(3);
  const env = server
    ? {
        GATEHOUSE_HOST: "127.0.0.1",
        GATEHOUSE_API_PORT: String(api),
        GATEHOUSE_PDP_PORT: String(pdp),
        GATEHOUSE_OPA_PORT: String(opa),
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_LOG_LEVEL: "warn",
        DATABASE_URL: "",
      }
    : {};
  const started = performance.now();
  const child = spawn(process.execPath, KINDS[kind].args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (server && output.includes("is running")) {
        const elapsed = performance.now() - started;
        child.kill("SIGTERM");
        child.once("exit", () => resolve(elapsed));
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      if (!server && code === 0) resolve(performance.now() - started);
      else if (!output.includes("is running"))
        reject(new Error(`${KINDS[kind].label} exited ${code}:\n${output}`));
    });
  }).finally(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
}

export const startupScenario: Scenario<StartupData> = {
  name: "startup",
  description:
    "How long from `npm start` to a server that listens? The time from spawning `node bin/gatehouse.js serve` (the built dist/) to its " +
    "'is running' line (every port bound, the first organization made), as a ratio to `node -e 0` measured in the same round; " +
    "a first start on an empty data folder, a next start, the former tsx start and `gatehouse help`, interleaved.",
  async run(ctx: Context): Promise<StartupData> {
    execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: REPO_ROOT, stdio: "ignore" });
    const rounds = SCALE === "small" ? 3 : 15;
    const ms = Object.fromEntries(Object.keys(KINDS).map((k) => [k, [] as number[]])) as StartupData["ms"];
    // One warm-up round (file cache, the build), not counted.
    for (let round = -1; round < rounds; round++) {
      // "again" starts on the data folder "first" made just before it.
      const dataDir = ctx.res.tempDir("startup");
      for (const kind of Object.keys(KINDS) as Kind[]) {
        const elapsed = await timeOne(kind, kind === "tsx" ? ctx.res.tempDir("startup-tsx") : dataDir);
        if (round >= 0) ms[kind].push(elapsed);
      }
      if (round >= 0)
        ctx.log(
          `round ${round + 1}/${rounds}: ${(Object.keys(KINDS) as Kind[]).map((k) => `${k} ${fmt(ms[k].at(-1), 0)} ms`).join(", ")}`,
        );
    }
    const ratio = {} as StartupData["ratio"];
    for (const kind of Object.keys(KINDS) as Kind[]) {
      if (kind === "node") continue;
      const perRound = ms[kind].map((value, i) => value / (ms.node[i] as number));
      ratio[kind] = { median: median(perRound), min: Math.min(...perRound), max: Math.max(...perRound) };
    }
    ctx.table({
      title: `Start to listening (${rounds} interleaved rounds)`,
      columns: ["what", "median ms", "min–max ms", "× node -e 0 (median)", "× node -e 0 (min–max)"],
      rows: (Object.keys(KINDS) as Kind[]).map((kind) => [
        KINDS[kind].label,
        fmt(median(ms[kind]), 0),
        `${fmt(Math.min(...ms[kind]), 0)}–${fmt(Math.max(...ms[kind]), 0)}`,
        kind === "node" ? "1" : fmt(ratio[kind].median, 1),
        kind === "node" ? "-" : `${fmt(ratio[kind].min, 1)}–${fmt(ratio[kind].max, 1)}`,
      ]),
      notes: [
        "Each server is stopped once it prints its 'is running' block; ports are found free per start, SQLite in a temp folder.",
      ],
    });
    return { rounds, ms, ratio };
  },
  goals(data) {
    const first = data ? median(data.ms.first) : undefined;
    return [
      judge(
        "npm start serves within 2 s (first start)",
        first === undefined ? undefined : first < 2000,
        first === undefined || !data
          ? "-"
          : `${fmt(first, 0)} ms median, ${fmt(data.ratio.first.median, 1)}× node -e 0`,
      ),
    ];
  },
};
