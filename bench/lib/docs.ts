import fs from "node:fs";
import path from "node:path";
import * as prettier from "prettier";
import { REPO_ROOT } from "./config.ts";
import { SCENARIOS } from "../scenarios/index.ts";
import { evaluateGoals } from "./goals.ts";
import { markdownTable, type ScenarioResult } from "./report.ts";

const START = "<!-- bench:results:start -->";
const END = "<!-- bench:results:end -->";
const ORDER = SCENARIOS.map((scenario) => scenario.name);

/** The generated part of docs/benchmarks.md: machine, goals and every scenario's tables. */
export function renderResults(results: ScenarioResult[]): string {
  const sorted = [...results].sort(
    (left, right) => ORDER.indexOf(left.scenario) - ORDER.indexOf(right.scenario),
  );
  const machine = sorted[0]?.machine;
  const out: string[] = [];
  if (machine) {
    out.push(
      `Machine: ${machine.cpu_model}, ${machine.cores} cores, ${machine.memory_gb} GB memory, ${machine.os}, Node ${machine.node}.`,
      "",
      "| scenario | status | run at (UTC) | took | load average at start (1/5/15 min) | command |",
      "| --- | --- | --- | ---: | --- | --- |",
      ...sorted.map(
        (result) =>
          `| ${result.scenario} | ${result.status} | ${result.started_at.slice(0, 16).replace("T", " ")} | ${result.elapsed_s} s | ${result.machine.load_average.join(" / ")} | \`${result.command}\` |`,
      ),
      "",
    );
    const loaded = sorted.filter((result) => (result.machine.load_average[0] ?? 0) > 1.5);
    if (loaded.length > 0) {
      out.push(
        `**The machine was loaded** (1-minute load average above 1.5 on 2 cores) when ${loaded.map((result) => result.scenario).join(", ")} started: other work shared the cores, so those absolute figures are low and noisy; the ratios measured in the same run are the more telling.`,
        "",
      );
    }
  }
  out.push("### Goals", "", "| goal | figure | status |", "| --- | --- | --- |");
  for (const goal of evaluateGoals(sorted, SCENARIOS))
    out.push(`| ${goal.goal} | ${goal.figure} | **${goal.status}** |`);
  out.push("");
  for (const result of sorted) {
    out.push(`### ${result.scenario}`, "", result.description, "");
    if (result.status !== "ok") out.push(`**FAILED**: ${(result.error ?? "").split("\n")[0]}`, "");
    for (const table of result.tables) {
      out.push(`**${table.title}**`, "", markdownTable(table), "");
      for (const note of table.notes ?? []) out.push(`- ${note}`);
      if (table.notes?.length) out.push("");
    }
    for (const note of result.notes) out.push(`- ${note}`);
    if (result.notes.length) out.push("");
  }
  return out.join("\n");
}

/** Replaces the generated block of docs/benchmarks.md (between the bench:results markers), formatted as the repo's prettier does. */
export async function updateDocs(results: ScenarioResult[]): Promise<string> {
  const file = path.join(REPO_ROOT, "docs", "benchmarks.md");
  const text = fs.readFileSync(file, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${file} has no ${START} ... ${END} block`);
  const next = `${text.slice(0, start + START.length)}\n\n${renderResults(results)}\n${text.slice(end)}`;
  const options = (await prettier.resolveConfig(file)) ?? {};
  fs.writeFileSync(file, await prettier.format(next, { ...options, filepath: file }));
  return file;
}
