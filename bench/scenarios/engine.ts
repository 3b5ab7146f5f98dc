import { settings } from "../lib/config.ts";
import { fmt } from "../lib/report.ts";
import type { Context, Scenario } from "../lib/scenario.ts";
import { runEngineWorker } from "../lib/worker.ts";

interface KindResult {
  decisions_per_s: number;
  ns_per_decision: number;
  cpu_ns_per_decision: number;
  p50_ns: number;
  p99_ns: number;
}

const LABELS: Record<string, string> = {
  rbac: "RBAC (tenant roles)",
  rebac1: "ReBAC depth 1",
  rebac3: "ReBAC depth 3",
  abac: "ABAC (condition sets)",
};

export const engineScenario: Scenario = {
  name: "engine",
  description:
    "The decision engine in process (no HTTP): decisions/s and ns/decision at 1M relationship tuples and 1M role assignments.",
  async run(ctx: Context) {
    const o = settings.engine;
    // every user holds two assignments (a tenant role and an instance role)
    const r = await runEngineWorker({
      mode: "engine",
      users: Math.ceil(o.assignments / 2),
      tuples: o.tuples,
      checks: 10_000,
      seconds: o.seconds,
    });
    const counts = r["counts"] as Record<string, number>;
    const kinds = r["kinds"] as Record<string, KindResult>;
    ctx.log(`built ${fmt(counts["facts"])} facts in ${fmt(r["build_ms"] as number)} ms`);
    ctx.table({
      title: `Engine in process: ${fmt(counts["tuples"])} tuples, ${fmt(counts["role_assignments"])} role assignments, ${fmt(counts["users"])} users, ${fmt(counts["instances"])} instances`,
      columns: ["check", "decisions/s", "ns/decision (wall)", "ns/decision (CPU)", "p50 alone", "p99 alone"],
      rows: ["rbac", "rebac1", "rebac3", "abac"].map((k) => {
        const x = kinds[k] as KindResult;
        return [
          LABELS[k] ?? k,
          fmt(x.decisions_per_s),
          fmt(x.ns_per_decision),
          fmt(x.cpu_ns_per_decision),
          `${fmt(x.p50_ns)} ns`,
          `${fmt(x.p99_ns)} ns`,
        ];
      }),
      notes: [
        "10,000 prepared checks per kind (about half allow), looped for the measured time, every answer checked; reasons included.",
        "CPU = this process's user+system time: less disturbed than wall time when other work shares the cores. 'alone' = each check timed by itself (timer cost included).",
      ],
    });
    ctx.data["counts"] = counts;
    ctx.data["build_ms"] = r["build_ms"];
    ctx.data["kinds"] = kinds;
    ctx.data["heap_bytes"] = r["heap_bytes"];
  },
};
