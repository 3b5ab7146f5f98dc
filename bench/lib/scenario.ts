import { formatTable, type Table } from "./report.ts";
import type { Resources } from "./procs.ts";

export interface Context {
  res: Resources;
  log(message: string): void;
  /** Prints the table now and keeps it for the results file. */
  table(table: Table): void;
  note(text: string): void;
}

/** A goal of the project, judged from a scenario's latest result. */
export interface Goal {
  goal: string;
  figure: string;
  status: "met" | "missed" | "not measured";
}

/** One question, one scenario: `run` measures and returns its figures; `goals` judges them. */
export interface Scenario<Data = unknown> {
  name: string;
  /** The question the scenario answers, and how. */
  description: string;
  run(ctx: Context): Promise<Data>;
  /** The goals this scenario's figures decide; `data` is undefined when it has no successful result yet. */
  goals?(data: Data | undefined): Goal[];
}

/** A goal's verdict: undefined when the figures to decide it are missing. */
export const judge = (goal: string, met: boolean | undefined, figure: string): Goal => ({
  goal,
  figure: met === undefined ? "-" : figure,
  status: met === undefined ? "not measured" : met ? "met" : "missed",
});

export function makeContext(
  res: Resources,
  name: string,
): { ctx: Context; tables: Table[]; notes: string[] } {
  const tables: Table[] = [];
  const notes: string[] = [];
  const started = Date.now();
  const ctx: Context = {
    res,
    log: (message) => console.log(`  [${name} +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`),
    table(table) {
      tables.push(table);
      console.log("\n" + formatTable(table) + "\n");
    },
    note(text) {
      notes.push(text);
      console.log(`  note: ${text}`);
    },
  };
  return { ctx, tables, notes };
}

/** Fails the scenario: wrong answers are never just reported. */
export function fail(message: string): never {
  throw new Error(message);
}
