// A filter plan (docs/data-filtering.md) turned into a WHERE condition for the app's own table, on PostgreSQL or
// SQLite: plain SQL text with parameters, or a Kysely expression (kysely.ts). The translation keeps the plan's
// two-valued logic: every comparison is guarded by `IS NOT NULL`, so a NULL column (a missing attribute) makes a
// comparison false and `not` of it true, as in checks; SQL's NULL would otherwise make both unknown.

import type { PlanExpression, ResourcePlan } from "../pdp/engine/types.ts";

export type FilterDialect = "postgres" | "sqlite";

/**
 * Field -> column. A column is a name (`"tenant_id"`, `"d.tenant_id"`) or `{column, array: true}` for an
 * attribute holding a list: a PostgreSQL array column, or a JSON array in a SQLite text column.
 */
export type FilterColumns = Record<string, string | { column: string; array?: boolean }>;

export interface FilterOptions {
  dialect: FilterDialect;
  columns: FilterColumns;
}

/** A piece of the condition: SQL text, a value to bind, or a column to quote. */
export type Fragment = string | { value: unknown } | { column: string };

/** A plan the adapter cannot state in SQL (a field with no column, a value the column cannot hold). */
export class FilterPlanError extends Error {}

/** Above this many values a SQLite `IN` list becomes one JSON parameter read through json_each. */
const SQLITE_INLINE_LIST = 100;

type Comparison = Extract<PlanExpression, { field: string }>;

class Translator {
  constructor(private readonly options: FilterOptions) {}

  private get postgres(): boolean {
    return this.options.dialect === "postgres";
  }

  /** SQLite binds no booleans: 1 and 0, which is how it stores them. */
  private bind(value: unknown): Fragment {
    if (typeof value === "boolean" && !this.postgres) return { value: value ? 1 : 0 };
    return { value };
  }

  expression(expression: PlanExpression): Fragment[] {
    switch (expression.operator) {
      case "and":
      case "or": {
        const glue = expression.operator === "and" ? " AND " : " OR ";
        const out: Fragment[] = ["("];
        expression.operands.forEach((operand, i) => {
          if (i > 0) out.push(glue);
          out.push(...this.expression(operand));
        });
        return [...out, ")"];
      }
      case "not":
        return ["(NOT ", ...this.expression(expression.operands[0]), ")"];
      default:
        return this.comparison(expression);
    }
  }

  private columnOf(field: string): { column: string; array: boolean } {
    const mapped = Object.hasOwn(this.options.columns, field) ? this.options.columns[field] : undefined;
    if (mapped === undefined)
      throw new FilterPlanError(`the plan compares field "${field}", which has no column`);
    return typeof mapped === "string"
      ? { column: mapped, array: false }
      : { column: mapped.column, array: mapped.array === true };
  }

  private comparison(c: Comparison): Fragment[] {
    const { column, array } = this.columnOf(c.field);
    const col: Fragment = { column };
    const body = array ? this.arrayComparison(c, col) : this.scalarComparison(c, col);
    if (body === false) return ["(1 = 0)"];
    return ["(", col, " IS NOT NULL AND ", ...body, ")"];
  }

  private scalar(c: Comparison, value: unknown): void {
    if (value === null || (typeof value === "object" && value !== null)) {
      throw new FilterPlanError(
        `the plan compares "${c.field}" with ${JSON.stringify(value)}; map the field as an array column or ` +
          "keep scalar values in scalar columns",
      );
    }
  }

  private list(c: Comparison, col: Fragment): Fragment[] | false {
    const values = (c.value as unknown[]).filter((v) => v !== null);
    for (const v of values) this.scalar(c, v);
    if (values.length === 0) return false;
    if (this.postgres) return [col, " = ANY(", { value: values }, ")"];
    if (values.length > SQLITE_INLINE_LIST) {
      return [col, " IN (SELECT value FROM json_each(", { value: JSON.stringify(values) }, "))"];
    }
    const out: Fragment[] = [col, " IN ("];
    values.forEach((v, i) => out.push(...(i > 0 ? [", "] : []), this.bind(v)));
    return [...out, ")"];
  }

  /** A comparison on a scalar column; false when it can never hold on a non-NULL value of SQL. */
  private scalarComparison(c: Comparison, col: Fragment): Fragment[] | false {
    const v = c.value;
    const ordered = (op: string): Fragment[] => {
      this.scalar(c, v);
      const text = typeof v === "string" && this.postgres ? ' COLLATE "C"' : "";
      return [col, text, ` ${op} `, this.bind(v)];
    };
    switch (c.operator) {
      case "eq":
      case "ne":
        // null is a present JSON null in a check, and NULL in SQL is a missing attribute: never equal.
        if (v === null) return c.operator === "eq" ? false : [col, " IS NOT NULL"];
        this.scalar(c, v);
        return [col, c.operator === "eq" ? " = " : " <> ", this.bind(v)];
      case "lt":
        return ordered("<");
      case "le":
        return ordered("<=");
      case "gt":
        return ordered(">");
      case "ge":
        return ordered(">=");
      case "in":
      case "not_in": {
        if (!Array.isArray(v)) return false;
        const inList = this.list(c, col);
        if (c.operator === "in") return inList;
        return inList === false ? [col, " IS NOT NULL"] : ["NOT ", ...inList];
      }
      case "contains":
      case "not_contains": {
        // A text column never contains a non-string; "not contains" then holds on any value.
        if (typeof v !== "string") return c.operator === "contains" ? false : ["1 = 1"];
        const found: Fragment[] = this.postgres
          ? ["strpos(", col, ", ", this.bind(v), ") > 0"]
          : ["instr(", col, ", ", this.bind(v), ") > 0"];
        return c.operator === "contains" ? found : ["NOT ", ...found];
      }
      case "starts_with":
      case "ends_with": {
        if (typeof v !== "string") return false;
        if (v.length === 0) return [col, " IS NOT NULL"];
        const length = [...v].length;
        if (c.operator === "starts_with") return ["substr(", col, `, 1, ${length}) = `, this.bind(v)];
        return this.postgres
          ? ["right(", col, `, ${length}) = `, this.bind(v)]
          : ["substr(", col, `, -${length}) = `, this.bind(v)];
      }
      default:
        // array_contains and the set operators hold only on lists: on a scalar column, never.
        return false;
    }
  }

  /** A comparison on a list column (PostgreSQL array, SQLite JSON array). */
  private arrayComparison(c: Comparison, col: Fragment): Fragment[] | false {
    const v = c.value;
    const each = (source: Fragment): Fragment[] => ["SELECT value FROM json_each(", source, ")"];
    const member = (negate: boolean): Fragment[] => {
      this.scalar(c, v);
      const body: Fragment[] = this.postgres
        ? [this.bind(v), " = ANY(", col, ")"]
        : ["EXISTS (", ...each(col), " WHERE value = ", this.bind(v), ")"];
      return negate ? ["NOT ", ...body] : body;
    };
    const listValue = (): Fragment => {
      const values = v as unknown[];
      for (const item of values) this.scalar(c, item);
      return { value: this.postgres ? values : JSON.stringify(values) };
    };
    switch (c.operator) {
      case "contains":
      case "array_contains":
        return member(false);
      case "not_contains":
        return member(true);
      case "eq":
      case "ne": {
        if (!Array.isArray(v)) return c.operator === "eq" ? false : ["1 = 1"];
        const same: Fragment[] = this.postgres
          ? [col, " = ", listValue()]
          : ["json(", col, ") = json(", listValue(), ")"];
        return c.operator === "eq" ? same : ["NOT ", ...same];
      }
      case "array_subset":
      case "array_superset":
      case "array_intersect": {
        if (!Array.isArray(v)) return false;
        const param = listValue();
        if (this.postgres) {
          const op = { array_subset: " <@ ", array_superset: " @> ", array_intersect: " && " }[c.operator];
          return [col, op, param];
        }
        if (c.operator === "array_intersect") {
          return ["EXISTS (", ...each(col), " WHERE value IN (", ...each(param), "))"];
        }
        const [inner, outer] = c.operator === "array_subset" ? [col, param] : [param, col];
        return ["NOT EXISTS (", ...each(inner), " WHERE value NOT IN (", ...each(outer), "))"];
      }
      default:
        throw new FilterPlanError(`"${c.operator}" on the list field "${c.field}" has no SQL translation`);
    }
  }
}

/** The plan's condition as fragments; always_allowed and always_denied become constant conditions. */
export function planFragments(plan: ResourcePlan, options: FilterOptions): Fragment[] {
  if (plan.kind === "always_allowed") return ["(1 = 1)"];
  if (plan.kind === "always_denied" || plan.condition === undefined) return ["(1 = 0)"];
  return new Translator(options).expression(plan.condition);
}

function quoteColumn(column: string): string {
  return column
    .split(".")
    .map((part) => `"${part.replaceAll('"', '""')}"`)
    .join(".");
}

export interface SqlFilter {
  /** A boolean SQL condition, to put after WHERE (or AND). */
  sql: string;
  params: unknown[];
}

/**
 * The plan as SQL text and parameters: `$n` placeholders for PostgreSQL (numbered after `paramOffset` parameters
 * the query already has), `?` for SQLite. Large key sets are one parameter: `= ANY($n)` on PostgreSQL, `IN (SELECT
 * value FROM json_each(?))` on SQLite.
 */
export function planToSql(plan: ResourcePlan, options: FilterOptions & { paramOffset?: number }): SqlFilter {
  const params: unknown[] = [];
  let sql = "";
  for (const fragment of planFragments(plan, options)) {
    if (typeof fragment === "string") sql += fragment;
    else if ("column" in fragment) sql += quoteColumn(fragment.column);
    else {
      params.push(fragment.value);
      sql += options.dialect === "postgres" ? `$${params.length + (options.paramOffset ?? 0)}` : "?";
    }
  }
  return { sql, params };
}
