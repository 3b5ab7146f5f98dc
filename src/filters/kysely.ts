// A filter plan as a Kysely expression: `.where(planToKysely(plan, {dialect, columns}))`. The same translation as
// planToSql (sql.ts), with Kysely binding the values and quoting the columns.

import { sql, type RawBuilder, type SqlBool } from "kysely";
import type { ResourcePlan } from "../pdp/engine/types.ts";
import { planFragments, type FilterOptions } from "./sql.ts";

export function planToKysely(plan: ResourcePlan, options: FilterOptions): RawBuilder<SqlBool> {
  const parts = planFragments(plan, options).map((fragment) =>
    typeof fragment === "string"
      ? sql.raw(fragment)
      : "column" in fragment
        ? sql.ref(fragment.column)
        : sql.val(fragment.value),
  );
  return sql<SqlBool>`${sql.join(parts, sql.raw(""))}`;
}
