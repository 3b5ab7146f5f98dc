import { settings } from "../lib/config.ts";
import { fmt } from "../lib/report.ts";
import { judge, type Context, type Scenario } from "../lib/scenario.ts";
import { runEngineWorker } from "../lib/worker.ts";

interface KindResult {
  decisions_per_s: number;
  ns_per_decision: number;
  cpu_ns_per_decision: number;
  p50_ns: number;
  p99_ns: number;
}

export interface EngineData {
  counts: Record<"facts" | "tuples" | "role_assignments" | "users" | "instances", number>;
  build_ms: number;
  kinds: Record<"rbac" | "rebac1" | "rebac3" | "abac", KindResult>;
  heap_bytes: number;
}

const LABELS: Record<string, string> = {
  rbac: "RBAC (tenant roles)",
  rebac1: "ReBAC depth 1",
  rebac3: "ReBAC depth 3",
  abac: "ABAC (condition sets)",
};

export const engineScenario: Scenario<EngineData> = {
  name: "engine",
  description:
    "How fast does the engine decide in process (no HTTP)? Decisions/s and ns/decision at 1M relationship tuples and 1M role assignments.",
  async run(ctx: Context): Promise<EngineData> {
    const sizes = settings.engine;
    // every user holds two assignments (a tenant role and an instance role)
    const worker = await runEngineWorker({
      mode: "engine",
      users: Math.ceil(sizes.assignments / 2),
      tuples: sizes.tuples,
      checks: 10_000,
      seconds: sizes.seconds,
    });
    const data: EngineData = {
      counts: worker["counts"] as EngineData["counts"],
      build_ms: worker["build_ms"] as number,
      kinds: worker["kinds"] as EngineData["kinds"],
      heap_bytes: worker["heap_bytes"] as number,
    };
    const { counts, kinds } = data;
    ctx.log(`built ${fmt(counts.facts)} facts in ${fmt(data.build_ms)} ms`);
    ctx.table({
      title: `Engine in process: ${fmt(counts.tuples)} tuples, ${fmt(counts.role_assignments)} role assignments, ${fmt(counts.users)} users, ${fmt(counts.instances)} instances`,
      columns: ["check", "decisions/s", "ns/decision (wall)", "ns/decision (CPU)", "p50 alone", "p99 alone"],
      rows: (["rbac", "rebac1", "rebac3", "abac"] as const).map((kind) => {
        const result = kinds[kind];
        return [
          LABELS[kind] ?? kind,
          fmt(result.decisions_per_s),
          fmt(result.ns_per_decision),
          fmt(result.cpu_ns_per_decision),
          `${fmt(result.p50_ns)} ns`,
          `${fmt(result.p99_ns)} ns`,
        ];
      }),
      notes: [
        "10,000 prepared checks per kind (about half allow), looped for the measured time, every answer checked; reasons included.",
        "CPU = this process's user+system time: less disturbed than wall time when other work shares the cores. 'alone' = each check timed by itself (timer cost included).",
      ],
    });
    return data;
  },
  goals(data) {
    const at = data
      ? ` at ${fmt(data.counts.tuples)} tuples, ${fmt(data.counts.role_assignments)} assignments`
      : "";
    return (
      [
        ["rbac", "In-process RBAC under 2 µs per decision", 2000],
        ["rebac3", "In-process ReBAC depth 3 under 20 µs per decision", 20_000],
      ] as const
    ).map(([kind, goal, limitNs]) => {
      const result = data?.kinds[kind];
      return judge(
        goal,
        result && result.ns_per_decision < limitNs,
        `${fmt((result?.ns_per_decision ?? 0) / 1000, 2)} µs wall, ${fmt((result?.cpu_ns_per_decision ?? 0) / 1000, 2)} µs CPU${at}`,
      );
    });
  },
};
