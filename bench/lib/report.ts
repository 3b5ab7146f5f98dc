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
  /** The figures `run` returned (the scenario's own type), for its goals and for anyone comparing runs. */
  data: unknown;
}

/** 12345.6 -> "12,346"; small numbers keep `digits` decimals. */
export function fmt(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "-";
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Latency in microseconds as "0.42 ms" / "12.3 ms". */
export function ms(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return "-";
  const milliseconds = us / 1000;
  return `${milliseconds < 10 ? milliseconds.toFixed(2) : milliseconds < 100 ? milliseconds.toFixed(1) : milliseconds.toFixed(0)} ms`;
}

export function ratio(
  numerator: number | null | undefined,
  denominator: number | null | undefined,
  digits = 2,
): string {
  if (!numerator || !denominator || !Number.isFinite(numerator) || !Number.isFinite(denominator)) return "-";
  return `${(numerator / denominator).toFixed(digits)}x`;
}

export function pct(fraction: number, digits = 0): string {
  return Number.isFinite(fraction) ? `${(fraction * 100).toFixed(digits)}%` : "-";
}

const text = (cell: Cell) =>
  cell === null || cell === undefined ? "-" : typeof cell === "number" ? fmt(cell) : cell;

export function formatTable(table: Table): string {
  const cells = [table.columns, ...table.rows.map((row) => row.map(text))];
  const widths = table.columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ");
  const out = [
    `== ${table.title}`,
    line(cells[0] ?? []),
    widths.map((width) => "-".repeat(width)).join("  "),
  ];
  for (const row of cells.slice(1)) out.push(line(row));
  for (const note of table.notes ?? []) out.push(`   ${note}`);
  return out.join("\n");
}

export function markdownTable(table: Table): string {
  const esc = (value: string) => value.replace(/\|/g, "\\|");
  const out = [
    `| ${table.columns.map(esc).join(" | ")} |`,
    `| ${table.columns.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
  ];
  for (const row of table.rows) out.push(`| ${row.map((cell) => esc(text(cell))).join(" | ")} |`);
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
    .filter((name) => name.endsWith(".json"))
    .map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8")) as ScenarioResult)
    .filter((result) => typeof result.scenario === "string" && Array.isArray(result.tables));
}
