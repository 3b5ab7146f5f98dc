// The public surface of the decision engine.
export {
  createEngine,
  DEFAULT_LISTING_HISTORY,
  DEFAULT_TENANT,
  type Engine,
  type EngineOptions,
} from "./engine.ts";
export { validateConditions, CONDITION_OPERATORS, type ConditionProblem } from "./conditions.ts";
export type * from "./types.ts";
export type { ActionSearchQuery, ResourceSearchQuery, SubjectSearchQuery } from "./search.ts";
export { matchesPlan, planField } from "./filter-plan.ts";
export type { ListAnswer, ListCursor, ListRequest, ResourceListQuery, SubjectListQuery } from "./walks.ts";
