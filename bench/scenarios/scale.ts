import { settings } from "../lib/config.ts";
import { fmt } from "../lib/report.ts";
import { judge, type Context, type Scenario } from "../lib/scenario.ts";
import { runEngineWorker } from "../lib/worker.ts";

interface KindLatency {
  p50_ns: number;
  p99_ns: number;
  mean_ns: number;
}

/** One environment size, as the engine worker measured it. */
export interface SizeResult {
  users: number;
  counts: Record<"facts", number>;
  memory: Record<"rss_bytes" | "heap_bytes" | "rss_bytes_per_fact" | "heap_bytes_per_fact", number>;
  kinds: Record<"rbac" | "rebac1" | "rebac3" | "abac", KindLatency>;
  build_ms: number;
  snapshot_parse_ms: number;
}

export interface ScaleData {
  sizes: SizeResult[];
}

const MB = 1024 * 1024;

export const scaleScenario: Scenario<ScaleData> = {
  name: "scale",
  description:
    "How do build time and memory grow with the environment? Environments of 10k, 100k and 1M users (each with a tenant role, an instance role and about one tuple per user; 1M users make 5.0M facts): " +
    "PDP build time, resident memory, bytes per fact and check latency at each size, each in a fresh process.",
  async run(ctx: Context): Promise<ScaleData> {
    const rows = [];
    const latencyRows = [];
    const sizes: SizeResult[] = [];
    for (const users of settings.scale.users) {
      const size = {
        users,
        ...(await runEngineWorker({ mode: "scale", users, tuples: users, checks: 5000 })),
      } as SizeResult;
      const { counts, memory, kinds } = size;
      ctx.log(
        `${fmt(users)} users: ${fmt(counts.facts)} facts, built in ${fmt(size.build_ms)} ms, RSS +${fmt(memory.rss_bytes / MB)} MB`,
      );
      rows.push([
        fmt(users),
        fmt(counts.facts),
        `${fmt(size.snapshot_parse_ms)} ms`,
        `${fmt(size.build_ms)} ms`,
        `${fmt(memory.rss_bytes / MB)} MB`,
        `${fmt(memory.heap_bytes / MB)} MB`,
        fmt(memory.rss_bytes_per_fact),
        fmt(memory.heap_bytes_per_fact),
      ]);
      latencyRows.push([
        fmt(users),
        ...(["rbac", "rebac1", "rebac3", "abac"] as const).map(
          (kind) => `${fmt(kinds[kind].mean_ns)} / ${fmt(kinds[kind].p99_ns)}`,
        ),
      ]);
      sizes.push(size);
    }
    ctx.table({
      title: "Scale and memory (engine in a fresh process per size)",
      columns: [
        "users",
        "facts",
        "parse (pages)",
        "engine build",
        "RSS retained",
        "heap retained",
        "RSS bytes/fact",
        "heap bytes/fact",
      ],
      rows,
      notes: [
        "facts = users + tenants + resource instances + role assignments + relationship tuples.",
        "retained = after the build, with the input dropped and a full GC, minus before generating the input (--expose-gc).",
        "The input is the snapshot stream's lines (the policy, then pages of 5,000 facts of one kind), built page by page as a standalone PDP does: parse = JSON.parse of each line, build = loadPage of each page plus the first decision (schema compile).",
      ],
    });
    ctx.table({
      title: "Check latency by size: mean ns / p99 ns (in process)",
      columns: ["users", "RBAC", "ReBAC depth 1", "ReBAC depth 3", "ABAC"],
      rows: latencyRows,
      notes: ["mean from a tight loop; p99 from each check timed alone (includes the timer's cost)."],
    });
    return { sizes };
  },
  goals(data) {
    const atMillion = data?.sizes.find((size) => size.users >= 1_000_000);
    // 1M users hold 5.0M facts (users, tenants, instances, assignments, tuples): issue 24's 5M-fact environment
    const atFive = data?.sizes.find((size) => size.counts.facts >= 5_000_000);
    return [
      judge(
        "Engine build at 1M users at most 5 s",
        atMillion ? atMillion.build_ms <= 5000 : undefined,
        `${fmt(atMillion?.build_ms)} ms at ${fmt(atMillion?.users)} users`,
      ),
      judge(
        "Engine RSS per fact at 5M facts at most 150 B",
        atFive ? atFive.memory.rss_bytes_per_fact <= 150 : undefined,
        `${fmt(atFive?.memory.rss_bytes_per_fact)} B/fact RSS, ${fmt(atFive?.memory.heap_bytes_per_fact)} B/fact heap at ${fmt(atFive?.counts.facts)} facts`,
      ),
    ];
  },
};
