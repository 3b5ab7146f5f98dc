import fs from "node:fs";
import path from "node:path";
import type { Machine } from "./machine.ts";

export type Cell = string | number | null | undefined;

export interface Table {
  title: string;
  columns: string[];
  rows: Cell[][];
  notes?: string[];
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  status: "ok" | "failed";
  error?: string;
  scale: string;
  command: string;
  started_at: string;
  elapsed_s: number;
  machine: Machine;
  load_average_after: number[];
  tables: Table[];
  notes: string[];
  /** Raw figures, for the goals and for anyone comparing runs. */
  data: Record<string, unknown>;
}

/** 12345.6 -> "12,346"; small numbers keep `digits` decimals. */
export function fmt(n: number | null | undefined, digits = 0): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "-";
  return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Latency in microseconds as "0.42 ms" / "12.3 ms". */
export function ms(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return "-";
  const v = us / 1000;
  return `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ms`;
}

export function ratio(a: number | null | undefined, b: number | null | undefined, digits = 2): string {
  if (!a || !b || !Number.isFinite(a) || !Number.isFinite(b)) return "-";
  return `${(a / b).toFixed(digits)}x`;
}

export function pct(a: number, digits = 0): string {
  return Number.isFinite(a) ? `${(a * 100).toFixed(digits)}%` : "-";
}

const text = (c: Cell) => (c === null || c === undefined ? "-" : typeof c === "number" ? fmt(c) : c);

export function formatTable(t: Table): string {
  const cells = [t.columns, ...t.rows.map((r) => r.map(text))];
  const widths = t.columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  const out = [`== ${t.title}`, line(cells[0] ?? []), widths.map((w) => "-".repeat(w)).join("  ")];
  for (const r of cells.slice(1)) out.push(line(r));
  for (const n of t.notes ?? []) out.push(`   ${n}`);
  return out.join("\n");
}

export function markdownTable(t: Table): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  const out = [
    `| ${t.columns.map(esc).join(" | ")} |`,
    `| ${t.columns.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
  ];
  for (const r of t.rows) out.push(`| ${r.map((c) => esc(text(c))).join(" | ")} |`);
  return out.join("\n");
}

export function writeResult(dir: string, result: ScenarioResult): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${result.scenario}.json`);
  fs.writeFileSync(file, JSON.stringify(result, null, 2) + "\n");
  return file;
}

export function readResults(dir: string): ScenarioResult[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as ScenarioResult)
    .filter((r) => typeof r.scenario === "string" && Array.isArray(r.tables));
}
