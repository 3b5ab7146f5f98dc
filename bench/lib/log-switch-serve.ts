// `gatehouse serve` for the A/Bs of a log's cost within one process: SIGUSR2 pauses the log, and then resumes it,
// each time printing the state it left the log in. The decision log, or with BENCH_LOG_SWITCH=api-log the API log.
import { decisionLogSwitch } from "../../src/pdp/decision-log.ts";
import { apiLogSwitch } from "../../src/plugins/api-log.ts";

const [name, logSwitch] =
  process.env["BENCH_LOG_SWITCH"] === "api-log"
    ? ["API log", apiLogSwitch]
    : ["decision log", decisionLogSwitch];

process.on("SIGUSR2", () => {
  logSwitch.paused = !logSwitch.paused;
  process.stdout.write(`${name} switched ${logSwitch.paused ? "off" : "on"}\n`);
});
await import("../../src/main.ts");
