import type { Scenario } from "../lib/scenario.ts";
import { controlPlaneScenario } from "./control-plane.ts";
import { csvImportScenario } from "./csv-import.ts";
import { decisionLogScenario } from "./decision-log.ts";
import { engineScenario } from "./engine.ts";
import { listingsScenario } from "./listings.ts";
import { listsScenario } from "./lists.ts";
import { pdpDecisionLogScenario } from "./pdp-decision-log.ts";
import { pdpLogExportScenario } from "./pdp-log-export.ts";
import { pdpScenario } from "./pdp.ts";
import { pdpStandaloneScenario } from "./pdp-standalone.ts";
import { propagationScenario } from "./propagation.ts";
import { rebacPeersScenario } from "./rebac-peers.ts";
import { replayScenario } from "./replay.ts";
import { scaleScenario } from "./scale.ts";
import { soakScenario } from "./soak.ts";
import { startupScenario } from "./startup.ts";
import { webhooksScenario } from "./webhooks.ts";

/** Every scenario, in the order a full run takes them and docs/benchmarks.md shows them. */
export const SCENARIOS = [
  pdpScenario,
  rebacPeersScenario,
  pdpDecisionLogScenario,
  pdpLogExportScenario,
  soakScenario,
  engineScenario,
  scaleScenario,
  controlPlaneScenario,
  csvImportScenario,
  webhooksScenario,
  listsScenario,
  listingsScenario,
  propagationScenario,
  pdpStandaloneScenario,
  decisionLogScenario,
  replayScenario,
  startupScenario,
] as Scenario[];
