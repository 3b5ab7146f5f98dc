import { settings } from "../lib/config.ts";
import { fmt } from "../lib/report.ts";
import type { Context, Scenario } from "../lib/scenario.ts";
import { runEngineWorker } from "../lib/worker.ts";

interface KindLatency {
  p50_ns: number;
  p99_ns: number;
  mean_ns: number;
}

const MB = 1024 * 1024;

export const scaleScenario: Scenario = {
  name: "scale",
  description:
    "Environments of 10k, 100k and 1M users (each with a tenant role, an instance role and about one tuple per user): " +
    "PDP build time, resident memory, bytes per fact and check latency at each size, each in a fresh process.",
  async run(ctx: Context) {
    const rows = [];
    const latencyRows = [];
    const sizes: Record<string, unknown>[] = [];
    for (const users of settings.scale.users) {
      const r = await runEngineWorker({ mode: "scale", users, tuples: users, checks: 5000 });
      const c = r["counts"] as Record<string, number>;
      const m = r["memory"] as Record<string, number>;
      const k = r["kinds"] as Record<string, KindLatency>;
      ctx.log(
        `${fmt(users)} users: ${fmt(c["facts"])} facts, built in ${fmt(r["build_ms"] as number)} ms, RSS +${fmt((m["rss_bytes"] ?? 0) / MB)} MB`,
      );
      rows.push([
        fmt(users),
        fmt(c["facts"]),
        `${fmt(r["snapshot_parse_ms"] as number)} ms`,
        `${fmt(r["build_ms"] as number)} ms`,
        `${fmt((m["rss_bytes"] ?? 0) / MB)} MB`,
        `${fmt((m["heap_bytes"] ?? 0) / MB)} MB`,
        fmt(m["rss_bytes_per_fact"]),
        fmt(m["heap_bytes_per_fact"]),
      ]);
      latencyRows.push([
        fmt(users),
        ...["rbac", "rebac1", "rebac3", "abac"].flatMap((name) => {
          const x = k[name] as KindLatency;
          return [`${fmt(x.mean_ns)} / ${fmt(x.p99_ns)}`];
        }),
      ]);
      sizes.push({ users, ...r });
    }
    ctx.table({
      title: "Scale and memory (engine in a fresh process per size)",
      columns: [
        "users",
        "facts",
        "snapshot JSON.parse",
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
        "build = createEngine(snapshot data) plus the first decision (schema compile); parse = JSON.parse of the same snapshot.",
      ],
    });
    ctx.table({
      title: "Check latency by size: mean ns / p99 ns (in process)",
      columns: ["users", "RBAC", "ReBAC depth 1", "ReBAC depth 3", "ABAC"],
      rows: latencyRows,
      notes: ["mean from a tight loop; p99 from each check timed alone (includes the timer's cost)."],
    });
    ctx.data["sizes"] = sizes;
  },
};
