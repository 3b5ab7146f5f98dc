import type { ScenarioResult } from "./report.ts";
import type { Goal, Scenario } from "./scenario.ts";

/** Every scenario's goals, judged from its latest successful result. */
export function evaluateGoals(results: ScenarioResult[], scenarios: Scenario[]): Goal[] {
  return scenarios.flatMap(
    (scenario) =>
      scenario.goals?.(
        results.find((result) => result.scenario === scenario.name && result.status === "ok")?.data,
      ) ?? [],
  );
}
