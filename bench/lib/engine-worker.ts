// Runs in its own process (node --expose-gc): builds a generated environment in the engine and measures it.
// Prints one line "RESULT <json>". Modes: "engine" (decisions per second) and "scale" (build time, memory,
// latency); "snapshot" builds the engine from a standalone PDP's snapshot file and measures its memory.
import fs from "node:fs";
import readline from "node:readline";
import { SNAPSHOT_PAGE } from "../../src/domain/snapshot-stream.ts";
import { createEngine } from "../../src/pdp/engine/index.ts";
import type { EnvironmentData } from "../../src/pdp/engine/types.ts";
import { engineAssembler } from "../../src/pdp/snapshot-lines.ts";
import { generateEnvironment, type EngineCheck } from "./engine-data.ts";

interface Args {
  mode: "engine" | "scale" | "snapshot";
  /** mode "snapshot": a pdp-snapshot.ndjson file. */
  file?: string;
  users: number;
  tuples: number;
  checks: number;
  seconds?: number;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
const fullGc = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
const mem = () => {
  const memory = process.memoryUsage();
  return { rss: memory.rss, heap: memory.heapUsed + memory.external + memory.arrayBuffers };
};
const now = () => process.hrtime.bigint();

/** The engine built from a snapshot file page by page, as a standalone PDP builds it. */
async function engineFromSnapshot(file: string) {
  const { assembler, engine } = engineAssembler();
  const lines = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  const t0 = now();
  for await (const line of lines) assembler.line(line);
  assembler.finish();
  return { engine, facts: assembler.facts, buildMs: Number(now() - t0) / 1e6 };
}

/** The environment as a snapshot stream's lines after its header: the policy, then pages of facts of one kind. */
function pageLines(data: EnvironmentData): string[] {
  const { users, tenants, resource_instances, role_assignments, relationship_tuples, ...policy } = data;
  const facts = { users, tenants, resource_instances, role_assignments, relationship_tuples };
  const lines = [JSON.stringify(policy)];
  for (const [kind, list] of Object.entries(facts)) {
    for (let i = 0; i < (list?.length ?? 0); i += SNAPSHOT_PAGE) {
      lines.push(JSON.stringify({ [kind]: list?.slice(i, i + SNAPSHOT_PAGE) }));
    }
  }
  return lines;
}

if (args.mode === "snapshot") {
  await fullGc();
  const start = mem();
  const { engine, facts, buildMs } = await engineFromSnapshot(args.file ?? "");
  await fullGc();
  const end = mem();
  engine.check({ user: { key: "user-0" }, action: "read", resource: { type: "folder", tenant: "t0" } });
  const result = {
    facts,
    build_ms: buildMs,
    rss_bytes: end.rss - start.rss,
    heap_bytes: end.heap - start.heap,
    rss_bytes_per_fact: (end.rss - start.rss) / facts,
  };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  process.exit(0);
}

await fullGc();
const before = mem();
let gen: ReturnType<typeof generateEnvironment> | undefined = generateEnvironment({
  users: args.users,
  tuples: args.tuples,
  checks: args.checks,
});
const { counts, checks } = gen;
// "engine": the data whole. "scale": the snapshot's page lines, and the generated objects let go, so that the
// build starts from text as a standalone PDP's does and the input is never whole in memory.
let lines: string[] | undefined = args.mode === "scale" ? pageLines(gen.data) : undefined;
let data = args.mode === "scale" ? undefined : gen.data;
gen = undefined;
await fullGc();
const withData = mem();
let parseNs = 0;
const t0 = now();
const engine = createEngine(data);
for (const line of lines ?? []) {
  const p0 = now();
  const page = JSON.parse(line) as EnvironmentData;
  parseNs += Number(now() - p0);
  engine.loadPage(page);
}
// the first decision compiles the schema: part of being ready to answer
engine.check({ user: { key: "u0" }, action: "read", resource: { type: "document", tenant: "t0" } });
const buildMs = (Number(now() - t0) - parseNs) / 1e6;
lines = undefined;
data = undefined;
await fullGc();
const after = mem();

function verify(name: string, list: EngineCheck[]): void {
  for (const check of list) {
    const decision = engine.check(check.query);
    if (decision.allow !== check.allow) {
      throw new Error(
        `${name}: ${JSON.stringify(check.query)} answered ${JSON.stringify(decision)}, expected allow=${check.allow}`,
      );
    }
  }
}
const kinds = Object.entries(checks) as [keyof typeof checks, EngineCheck[]][];
for (const [name, list] of kinds) verify(name, list);

/** Decisions per second over `seconds`, checking every answer. */
function throughput(list: EngineCheck[], seconds: number) {
  const deadline = now() + BigInt(Math.round(seconds * 1e9));
  let decisions = 0;
  let wrong = 0;
  const cpu0 = process.cpuUsage();
  const start = now();
  let end = start;
  do {
    for (const check of list) if (engine.check(check.query).allow !== check.allow) wrong++;
    decisions += list.length;
    end = now();
  } while (end < deadline);
  const ns = Number(end - start);
  const cpu = process.cpuUsage(cpu0);
  if (wrong > 0) throw new Error(`${wrong} wrong decisions under repetition`);
  return {
    decisions: decisions,
    ns_per_decision: ns / decisions,
    decisions_per_s: (decisions * 1e9) / ns,
    // CPU time of this process only: less disturbed than wall time when other work shares the cores
    cpu_ns_per_decision: ((cpu.user + cpu.system) * 1000) / decisions,
  };
}

/** Each check timed alone (includes the timer's own cost, measured as timer_ns). */
function latency(list: EngineCheck[], rounds: number) {
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const check of list) {
      const started = now();
      engine.check(check.query);
      samples.push(Number(now() - started));
    }
  }
  samples.sort((a, b) => a - b);
  const at = (percent: number) =>
    samples[Math.min(samples.length - 1, Math.floor((percent / 100) * samples.length))] as number;
  return { p50_ns: at(50), p99_ns: at(99), max_ns: samples[samples.length - 1] as number };
}

const out: Record<string, unknown> = { counts, build_ms: buildMs };
if (args.mode === "engine") {
  const seconds = args.seconds ?? 2;
  for (const [, list] of kinds) throughput(list, Math.min(0.5, seconds / 2)); // warm-up
  out["kinds"] = Object.fromEntries(
    kinds.map(([name, list]) => [name, { ...throughput(list, seconds), ...latency(list, 1) }]),
  );
  out["heap_bytes"] = after.heap - before.heap;
  out["rss_bytes"] = after.rss - before.rss;
} else {
  for (const [, list] of kinds) throughput(list, 0.2); // warm-up
  let timer = 0;
  for (let i = 0; i < 100_000; i++) {
    const started = now();
    timer += Number(now() - started);
  }
  out["timer_ns"] = timer / 100_000;
  out["memory"] = {
    rss_before: before.rss,
    rss_with_input: withData.rss,
    rss_after: after.rss,
    heap_before: before.heap,
    heap_after: after.heap,
    rss_bytes: after.rss - before.rss,
    heap_bytes: after.heap - before.heap,
    rss_bytes_per_fact: (after.rss - before.rss) / counts.facts,
    heap_bytes_per_fact: (after.heap - before.heap) / counts.facts,
  };
  out["kinds"] = Object.fromEntries(
    kinds.map(([name, list]) => [
      name,
      { ...latency(list, 3), mean_ns: throughput(list, 0.3).ns_per_decision },
    ]),
  );
  out["snapshot_parse_ms"] = parseNs / 1e6;
}
process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
