import { formatTable, type Table } from "./report.ts";
import type { Resources } from "./procs.ts";

export interface Context {
  res: Resources;
  log(message: string): void;
  /** Prints the table now and keeps it for the results file. */
  table(t: Table): void;
  note(text: string): void;
  data: Record<string, unknown>;
}

export interface Scenario {
  name: string;
  description: string;
  run(ctx: Context): Promise<void>;
}

export function makeContext(
  res: Resources,
  name: string,
): { ctx: Context; tables: Table[]; notes: string[] } {
  const tables: Table[] = [];
  const notes: string[] = [];
  const started = Date.now();
  const ctx: Context = {
    res,
    log: (m) => console.log(`  [${name} +${((Date.now() - started) / 1000).toFixed(0)}s] ${m}`),
    table(t) {
      tables.push(t);
      console.log("\n" + formatTable(t) + "\n");
    },
    note(text) {
      notes.push(text);
      console.log(`  note: ${text}`);
    },
    data: {},
  };
  return { ctx, tables, notes };
}

/** Fails the scenario: wrong answers are never just reported. */
export function fail(message: string): never {
  throw new Error(message);
}
