// npm run bench [-- NAME ...]: runs the scenarios (all by default), prints their tables, writes
// bench/results/<scenario>.json and, on a full-scale run of everything, refreshes docs/benchmarks.md and docs/perf/results.md.
import { SCALE, RESULTS_DIR } from "./lib/config.ts";
import { describeMachine, loadAverage } from "./lib/machine.ts";
import { closeAll, Resources } from "./lib/procs.ts";
import { updateDocs } from "./lib/docs.ts";
import { evaluateGoals } from "./lib/goals.ts";
import { readResults, writeResult, type ScenarioResult } from "./lib/report.ts";
import { makeContext } from "./lib/scenario.ts";
import { SCENARIOS } from "./scenarios/index.ts";

async function main(argv: string[]): Promise<number> {
  const wanted = argv.filter((arg) => !arg.startsWith("-"));
  if (argv.includes("--list") || argv.includes("--help")) {
    console.log(
      "npm run bench [-- NAME ...]   scenarios: all by default; BENCH_SCALE=small for a quick check",
    );
    console.log(
      "npm run bench -- --docs       only rewrite docs/benchmarks.md and docs/perf/results.md from bench/results\n",
    );
    for (const scenario of SCENARIOS) console.log(`${scenario.name.padEnd(14)} ${scenario.description}`);
    return 0;
  }
  if (argv.includes("--docs")) {
    console.log(`rewrote ${await updateDocs(readResults(RESULTS_DIR))}`);
    return 0;
  }
  const unknown = wanted.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name));
  if (unknown.length > 0) {
    console.error(
      `unknown scenario(s): ${unknown.join(", ")}; known: ${SCENARIOS.map((scenario) => scenario.name).join(", ")}`,
    );
    return 2;
  }
  const selected =
    wanted.length === 0 ? SCENARIOS : SCENARIOS.filter((scenario) => wanted.includes(scenario.name));
  const machine = describeMachine();
  const command = `npm run bench${wanted.length ? ` -- ${wanted.join(" ")}` : ""}${SCALE === "small" ? " (BENCH_SCALE=small)" : ""}`;
  console.log(`gatehouse bench: ${selected.map((scenario) => scenario.name).join(", ")} (scale ${SCALE})`);
  console.log(
    `machine: ${machine.cpu_model}, ${machine.cores} cores, ${machine.memory_gb} GB, ${machine.os}, Node ${machine.node}`,
  );
  console.log(`load average: ${machine.load_average.join(" ")}`);
  const started = Date.now();
  let failed = 0;
  for (const scenario of selected) {
    console.log(`\n#### ${scenario.name}: ${scenario.description}`);
    const res = new Resources();
    const { ctx, tables, notes } = makeContext(res, scenario.name);
    const t0 = Date.now();
    const machineNow = describeMachine();
    let error: string | undefined;
    let data: unknown;
    try {
      data = await scenario.run(ctx);
    } catch (caught) {
      error = caught instanceof Error ? (caught.stack ?? caught.message) : String(caught);
      console.error(`\n!! ${scenario.name} FAILED: ${error}`);
      failed++;
    } finally {
      await res.close();
    }
    const result: ScenarioResult = {
      scenario: scenario.name,
      description: scenario.description,
      status: error ? "failed" : "ok",
      ...(error && { error }),
      scale: SCALE,
      command,
      started_at: new Date(t0).toISOString(),
      elapsed_s: Math.round((Date.now() - t0) / 100) / 10,
      machine: machineNow,
      load_average_after: loadAverage(),
      tables,
      notes,
      data,
    };
    const file = writeResult(RESULTS_DIR, result);
    console.log(`  ${scenario.name}: ${result.status} in ${result.elapsed_s} s -> ${file}`);
  }
  const total = (Date.now() - started) / 1000;
  const latest = readResults(RESULTS_DIR);
  console.log("\n== Goals (latest results of every scenario in " + RESULTS_DIR + ")");
  for (const goal of evaluateGoals(latest, SCENARIOS))
    console.log(`  ${goal.status.padEnd(12)} ${goal.goal}: ${goal.figure}`);
  if (SCALE === "full" && process.env["BENCH_DOCS"] !== "0")
    console.log(`\nrewrote the results in ${await updateDocs(latest)}`);
  console.log(
    `\ntotal elapsed: ${Math.floor(total / 60)} min ${Math.round(total % 60)} s; load average now ${loadAverage().join(" ")}`,
  );
  if (failed > 0) console.error(`${failed} scenario(s) failed`);
  return failed > 0 ? 1 : 0;
}

const stop = () => {
  console.error("\ninterrupted: stopping the processes this run started");
  void closeAll().then(() => process.exit(130));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (caught: unknown) => {
    console.error(caught);
    void closeAll().then(() => process.exit(1));
  },
);
