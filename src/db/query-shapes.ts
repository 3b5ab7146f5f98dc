import { CompiledQuery, isCompilable, type Compilable, type Kysely, type QueryResult } from "kysely";

interface Compiled {
  sql: string;
  parameters: readonly unknown[];
  /** parameter position -> index of the value it takes */
  slots: Map<number, number>;
}

/**
 * Rows of one insert kept as a shape, at most: enough for a group commit's writes (src/changes/write-groups.ts). A
 * bigger insert is built by Kysely each time, as it is rare and its building costs little beside its running.
 */
export const SHAPED_ROWS = 32;

/** What QueryShapes uses of a database or a transaction (their tables do not matter to it). */
type Executor = Pick<Kysely<never>, "getExecutor" | "executeQuery">;

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

  async rows<O>(
    db: Executor,
    shape: string,
    values: readonly unknown[],
    build: (markers: readonly string[]) => Compilable<O> | CompiledQuery<O>,
  ): Promise<O[]> {
    return (await this.execute(db, shape, values, build)).rows;
  }

  /**
   * Inserts `rows` with the statement `build` makes for them, kept as a shape per name, number of rows (up to
   * SHAPED_ROWS) and columns: those whose value is not undefined, which Kysely's insert leaves out. Rows whose
   * columns differ, or more of them, are built by Kysely for this call only.
   */
  insert<R extends object, O>(
    db: Executor,
    name: string,
    rows: readonly R[],
    build: (rows: readonly R[]) => Compilable<O>,
  ): Promise<QueryResult<O>> {
    const columnsOf = (row: R) =>
      Object.keys(row).filter((c) => (row as Record<string, unknown>)[c] !== undefined);
    const [first] = rows;
    const columns = first ? columnsOf(first) : [];
    const shaped =
      first !== undefined &&
      rows.length <= SHAPED_ROWS &&
      rows.every((row) => {
        const own = columnsOf(row);
        return own.length === columns.length && own.every((c, i) => c === columns[i]);
      });
    if (!shaped) return db.executeQuery(build(rows));
    const values = rows.flatMap((row) => columns.map((c) => (row as Record<string, unknown>)[c]));
    return this.execute(db, `${name}/${rows.length}/${columns.join(",")}`, values, (markers) =>
      build(
        rows.map(
          (_, r) => Object.fromEntries(columns.map((c, i) => [c, markers[r * columns.length + i]])) as R,
        ),
      ),
    );
  }

  /** `rows`, with the whole result: what a write needs (`numAffectedRows`). */
  execute<O>(
    db: Executor,
    shape: string,
    values: readonly unknown[],
    build: (markers: readonly string[]) => Compilable<O> | CompiledQuery<O>,
  ): Promise<QueryResult<O>> {
    const adapter = db.getExecutor().adapter;
    let compiledShapes = this.#byAdapter.get(adapter);
    if (!compiledShapes) this.#byAdapter.set(adapter, (compiledShapes = new Map()));
    let compiled = compiledShapes.get(shape);
    if (!compiled) {
      const markers = values.map((_, i) => marker(i));
      const built = build(markers);
      const query = isCompilable(built) ? built.compile() : built;
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
    return db.executeQuery<O>(CompiledQuery.raw(compiled.sql, parameters));
  }
}
