// The public surface of the decision engine.
export { createEngine, DEFAULT_TENANT, type Engine, type EngineOptions } from "./engine.ts";
export { validateConditions, CONDITION_OPERATORS, type ConditionProblem } from "./conditions.ts";
export type * from "./types.ts";
export type { ActionSearchQuery, ResourceSearchQuery, SubjectSearchQuery } from "./search.ts";
export { matchesPlan, planField } from "./filter-plan.ts";
