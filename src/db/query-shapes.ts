import { CompiledQuery, type Compilable, type Kysely } from "kysely";

interface Compiled {
  sql: string;
  parameters: readonly unknown[];
  /** parameter position -> index of the value it takes */
  slots: Map<number, number>;
}

const marker = (i: number) => `\u0000gatehouse-value-${i}\u0000`;

/**
 * Hot queries whose SQL depends only on their shape, never on their values, built by Kysely once per shape: `build`
 * makes the query from marker values, and every later call runs the same SQL with the markers in its parameters
 * swapped for the call's values. Building and compiling a query can cost more than running it on SQLite (an API
 * key's lookup with its path's rows: about 6% of the event loop's time under PUT users).
 */
export class QueryShapes {
  /** Per dialect (its adapter: one per database, shared by its transactions), the compiled query of each shape. */
  readonly #byAdapter = new WeakMap<object, Map<string, Compiled>>();

  async rows<DB, O>(
    db: Kysely<DB>,
    shape: string,
    values: readonly unknown[],
    build: (markers: readonly string[]) => Compilable<O>,
  ): Promise<O[]> {
    const adapter = db.getExecutor().adapter;
    let compiledShapes = this.#byAdapter.get(adapter);
    if (!compiledShapes) this.#byAdapter.set(adapter, (compiledShapes = new Map()));
    let compiled = compiledShapes.get(shape);
    if (!compiled) {
      const markers = values.map((_, i) => marker(i));
      const query = build(markers).compile();
      const slots = new Map<number, number>();
      query.parameters.forEach((parameter, position) => {
        const i = markers.indexOf(parameter as string);
        if (i !== -1) slots.set(position, i);
      });
      const used = [...slots.values()].sort((a, b) => a - b);
      if (used.length !== values.length || used.some((i, k) => i !== k))
        throw new Error(`query shape ${shape}: each value must be a parameter exactly once`);
      compiled = { sql: query.sql, parameters: query.parameters, slots };
      compiledShapes.set(shape, compiled);
    }
    const { slots } = compiled;
    const parameters = compiled.parameters.map((p, position) => {
      const i = slots.get(position);
      return i === undefined ? p : values[i];
    });
    return (await db.executeQuery<O>(CompiledQuery.raw(compiled.sql, parameters))).rows;
  }
}
