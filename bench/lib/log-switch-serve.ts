// `gatehouse serve` for the decision log's A/B within one process: SIGUSR2 pauses the log, and then resumes it,
// each time printing the state it left the log in.
import { decisionLogSwitch } from "../../src/pdp/decision-log.ts";

process.on("SIGUSR2", () => {
  decisionLogSwitch.paused = !decisionLogSwitch.paused;
  process.stdout.write(`decision log switched ${decisionLogSwitch.paused ? "off" : "on"}\n`);
});
await import("../../src/main.ts");
