// Filter plans for the app's own database (docs/data-filtering.md): the PDP's plan (POST /plan/resources) turned
// into SQL, a Kysely expression or a Prisma `where`, and the reference evaluator for rows already in memory.
export {
  planToSql,
  FilterPlanError,
  type FilterColumns,
  type FilterDialect,
  type FilterOptions,
} from "./sql.ts";
export { planToKysely } from "./kysely.ts";
export { planToPrisma, type PrismaFields, type PrismaWhere } from "./prisma.ts";
export { matchesPlan } from "../pdp/engine/filter-plan.ts";
export type { PlanExpression, PlanResource, ResourcePlan } from "../pdp/engine/types.ts";
