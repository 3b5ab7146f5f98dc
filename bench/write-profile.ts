/**
 * Where a single write's CPU goes. Starts `gatehouse serve` with `--cpu-prof`, creates users (POST users) at c=8
 * after a warm-up, with the environment's webhook on (to a local receiver answering 204) or off, stops the server,
 * and prints the main thread's CPU per request over the measured load: by package (Kysely, Node's core, ...), by
 * SQLite's native calls, and Kysely's by the src function that called it. Throughput on a VM varies from run to
 * run; CPU per request varies less, so compare that (run the script in each worktree), on a quiet machine: other
 * load inflates it too.
 * Usage: node --import tsx bench/write-profile.ts [sqlite|postgres] [--webhook] [--seconds N]
 */
import fs from "node:fs";
import path from "node:path";
import { settings } from "./lib/config.ts";
import { Api } from "./lib/http.ts";
import { freshPgSchema } from "./lib/pg.ts";
import { BOOTSTRAP_KEY, Resources, startGatehouse } from "./lib/procs.ts";
import { runWrk } from "./lib/wrk.ts";
import { createUsersPlan, startReceiver, subscribeToFacts } from "./scenarios/webhooks.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const dialect = process.argv[2] === "postgres" ? "postgres" : "sqlite";
const webhook = process.argv.includes("--webhook");
const secondsAt = process.argv.indexOf("--seconds");
const seconds = secondsAt > 0 ? Number(process.argv[secondsAt + 1]) : 10;

/** What a sample's own frame is charged to. */
function category(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (functionName === "execute" && url.includes("sqlite-group-commit")) return "SQLite statements (native)";
  if (functionName === "exec" && url.includes("better-sqlite3")) return "SQLite BEGIN/COMMIT (native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  if (url.includes("/src/")) return `src/${url.split("/src/")[1]?.split("/")[0]}`;
  if (url.startsWith("node:")) return "Node's core";
  return functionName.startsWith("(") ? functionName : "native, other";
}

function summarize(profile: Profile, requests: number, windowUs: [number, number]): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = new Map<string, number>();
  const kyselyBy = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] as number;
    at += delta;
    if (at < windowUs[0] || at > windowUs[1]) return;
    const frame = (byId.get(id) as ProfileNode).callFrame;
    add(own, category(frame), delta);
    if (!frame.url.includes("node_modules/kysely")) return;
    let caller: number | undefined = id;
    while (caller !== undefined && !byId.get(caller)?.callFrame.url.includes("/src/"))
      caller = parent.get(caller);
    const callerFrame = caller === undefined ? undefined : byId.get(caller)?.callFrame;
    add(
      kyselyBy,
      callerFrame
        ? `${callerFrame.functionName || "(anonymous)"} in src/${callerFrame.url.split("/src/")[1]}`
        : "?",
      delta,
    );
  });
  const print = (title: string, map: Map<string, number>, rows: number) => {
    console.log(title);
    for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows))
      console.log(`  ${(us / requests).toFixed(1).padStart(7)} µs  ${key}`);
  };
  const busy = [...own].filter(([key]) => key !== "(idle)").reduce((sum, [, us]) => sum + us, 0);
  console.log(`main thread: ${(busy / requests).toFixed(0)} µs of CPU per request (idle excluded)`);
  print("by package or part:", own, 16);
  print("Kysely (building and compiling queries) by caller:", kyselyBy, 10);
}

const res = new Resources();
try {
  const profileDir = res.tempDir("write-profile");
  const dbUrl = dialect === "postgres" ? (await freshPgSchema(res, settings.pgUrl)).url : undefined;
  const server = await startGatehouse(res, {
    dataDir: res.tempDir("write-profile-data"),
    ...(dbUrl && { databaseUrl: dbUrl }),
    pdp: false,
    env: { GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
    nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`],
  });
  if (webhook) {
    const receiver = await startReceiver();
    res.defer(receiver.close);
    await subscribeToFacts(new Api(server.apiUrl, BOOTSTRAP_KEY), receiver.url);
  }
  const plan = (prefix: string) => createUsersPlan(server.apiUrl, prefix);
  await runWrk(plan("warmup"), 8, 3);
  const load = await runWrk(plan("measured"), 8, seconds);
  await server.proc.stop();
  const files = fs.readdirSync(profileDir).map((f) => path.join(profileDir, f));
  // the main thread's profile is the largest (worker threads write their own)
  const main = files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
  if (!main) throw new Error("the server wrote no CPU profile");
  const profile = JSON.parse(fs.readFileSync(main, "utf8")) as Profile;
  const end = profile.startTime + profile.timeDeltas.reduce((sum, d) => sum + d, 0);
  // the load ended just before the server was stopped: its last seconds, less a margin at each end
  const windowUs: [number, number] = [end - (seconds - 0.5) * 1e6, end - 0.5e6];
  console.log(
    `${dialect}, webhook ${webhook ? "on" : "off"}: ${load.rps.toFixed(0)} req/s at c=8 over ${seconds} s` +
      (load.problems.length ? ` (problems: ${load.problems.join("; ")})` : ""),
  );
  summarize(profile, load.rps * (seconds - 1), windowUs);
} finally {
  await res.close();
}
