// Filter plans for the app's own database (docs/data-filtering.md): the PDP's plan (POST /plan/resources) turned
// into SQL or a Kysely expression, and the reference evaluator for rows already in memory.
export {
  planToSql,
  FilterPlanError,
  type FilterColumns,
  type FilterDialect,
  type FilterOptions,
} from "./sql.ts";
export { planToKysely } from "./kysely.ts";
export { matchesPlan } from "../pdp/engine/filter-plan.ts";
export type { PlanExpression, PlanResource, ResourcePlan } from "../pdp/engine/types.ts";
