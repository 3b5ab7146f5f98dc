// Loaded into a Gatehouse server by the bench (`node --import ./bench/lib/loop-probe.mjs`), never by the server
// itself: records every run of the event loop that kept a 1 ms timer waiting more than 5 ms, with the CPU time the
// process used meanwhile, and writes them as JSON ([start µs on the monotonic clock, wall ms, CPU ms] each) to
// BENCH_LOOP_PROBE_FILE when the process exits. Plain JavaScript: it loads before tsx.
import fs from "node:fs";
import process from "node:process";
import { setInterval } from "node:timers";

const file = process.env["BENCH_LOOP_PROBE_FILE"];
const GAP_MS = 5;

if (file) {
  const gaps = [];
  const nowUs = () => Number(process.hrtime.bigint() / 1000n);
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  let lastUs = nowUs();
  let lastCpu = cpuMs();
  setInterval(() => {
    const us = nowUs();
    const cpu = cpuMs();
    const wall = (us - lastUs) / 1000;
    if (wall > GAP_MS) gaps.push([lastUs, wall, cpu - lastCpu]);
    lastUs = us;
    lastCpu = cpu;
  }, 1).unref();
  process.on("exit", () => fs.writeFileSync(file, JSON.stringify(gaps)));
}
