import fs from "node:fs";
import path from "node:path";
import * as prettier from "prettier";
import { REPO_ROOT } from "./config.ts";
import { evaluateGoals } from "./goals.ts";
import { markdownTable, type ScenarioResult } from "./report.ts";

const START = "<!-- bench:results:start -->";
const END = "<!-- bench:results:end -->";
const ORDER = ["pdp", "engine", "scale", "control-plane", "propagation"];

/** The generated part of docs/benchmarks.md: machine, goals and every scenario's tables. */
export function renderResults(results: ScenarioResult[]): string {
  const sorted = [...results].sort((a, b) => ORDER.indexOf(a.scenario) - ORDER.indexOf(b.scenario));
  const m = sorted[0]?.machine;
  const out: string[] = [];
  if (m) {
    out.push(
      `Machine: ${m.cpu_model}, ${m.cores} cores, ${m.memory_gb} GB memory, ${m.os}, Node ${m.node}.`,
      "",
      "| scenario | status | run at (UTC) | took | load average at start (1/5/15 min) | command |",
      "| --- | --- | --- | ---: | --- | --- |",
      ...sorted.map(
        (r) =>
          `| ${r.scenario} | ${r.status} | ${r.started_at.slice(0, 16).replace("T", " ")} | ${r.elapsed_s} s | ${r.machine.load_average.join(" / ")} | \`${r.command}\` |`,
      ),
      "",
    );
    const loaded = sorted.filter((r) => (r.machine.load_average[0] ?? 0) > 1.5);
    if (loaded.length > 0) {
      out.push(
        `**The machine was loaded** (1-minute load average above 1.5 on 2 cores) when ${loaded.map((r) => r.scenario).join(", ")} started: other work shared the cores, so those absolute figures are low and noisy; the ratios measured in the same run are the more telling.`,
        "",
      );
    }
  }
  out.push("### Goals", "", "| goal | figure | status |", "| --- | --- | --- |");
  for (const g of evaluateGoals(sorted)) out.push(`| ${g.goal} | ${g.figure} | **${g.status}** |`);
  out.push("");
  for (const r of sorted) {
    out.push(`### ${r.scenario}`, "", r.description, "");
    if (r.status !== "ok") out.push(`**FAILED**: ${(r.error ?? "").split("\n")[0]}`, "");
    for (const t of r.tables) {
      out.push(`**${t.title}**`, "", markdownTable(t), "");
      for (const n of t.notes ?? []) out.push(`- ${n}`);
      if (t.notes?.length) out.push("");
    }
    for (const n of r.notes) out.push(`- ${n}`);
    if (r.notes.length) out.push("");
  }
  return out.join("\n");
}

/** Replaces the generated block of docs/benchmarks.md (between the bench:results markers), formatted as the repo's prettier does. */
export async function updateDocs(results: ScenarioResult[]): Promise<string> {
  const file = path.join(REPO_ROOT, "docs", "benchmarks.md");
  const text = fs.readFileSync(file, "utf8");
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${file} has no ${START} ... ${END} block`);
  const next = `${text.slice(0, a + START.length)}\n\n${renderResults(results)}\n${text.slice(b)}`;
  const options = (await prettier.resolveConfig(file)) ?? {};
  fs.writeFileSync(file, await prettier.format(next, { ...options, filepath: file }));
  return file;
}
