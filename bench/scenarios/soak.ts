import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { settings } from "../lib/config.ts";
import { Api } from "../lib/http.ts";
import { allowedPlan, sampler, seededPdp } from "../lib/pdp-setup.ts";
import { cpuTimes, startGatehouse } from "../lib/procs.ts";
import { fmt, ms, ratio } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { runWrk } from "../lib/wrk.ts";

const MB = 1024 * 1024;
const SLICE_SECONDS = 60;
/** Seconds of load before the first minute, for the JIT to settle (and a profiled server to get going). */
const WARMUP_SECONDS = 10;

/** One minute of the soak, and the server as it stood at its end. */
export interface SoakMinute {
  minute: number;
  rps: number;
  p50_us: number;
  p99_us: number;
  /** The server's event-loop CPU time per request (µs). */
  loop_cpu_us: number;
  rss_bytes: number;
  /** What the decision log stores: chunks (rows), decisions, and the database's bytes on disk (file and WAL). */
  log_rows: number;
  log_decisions: number;
  db_bytes: number;
  wal_bytes: number;
  /** The machine's one-minute load average at the minute's end: other work on the machine moves req/s too. */
  load_average: number;
}

export interface SoakData {
  concurrency: number;
  minutes: SoakMinute[];
  /** One minute in a new process over the data the soak left. */
  restarted: SoakMinute;
  /** The last minute's throughput over the first's. */
  last_over_first: number;
}

/** The server's resident set, from /proc (Linux). */
function rssBytes(pid: number | undefined): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  if (kb === undefined) fail(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

const fileSize = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);

/** The decision log's rows and decisions, read from the server's SQLite file by a read-only connection. */
function logSize(file: string): { rows: number; decisions: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const row = db
      .prepare("select count(*) as rows, coalesce(sum(count), 0) as decisions from decision_log_chunks")
      .get() as { rows: number; decisions: number };
    return row;
  } finally {
    db.close();
  }
}

export const soakScenario: Scenario<SoakData> = {
  name: "soak",
  description:
    "Does the PDP keep its pace over a long run? One gatehouse serve (embedded PDP, decision log on, as npm start " +
    "runs it) under RBAC /allowed load at c=64 for settings.soak.minutes one-minute slices, every answer checked; " +
    "per minute req/s, p50/p99, the server's RSS and what the decision log stores.",
  async run(ctx: Context): Promise<SoakData> {
    const setup = await seededPdp(ctx);
    await setup.server.proc.stop();
    const file = path.join(setup.dataDir, "gatehouse.db");
    const checks = setup.dataset.checks.rbac;
    const { concurrency } = settings.soak;
    const slices = Math.max(1, Math.round(settings.soak.minutes));
    /** A fresh process over the data (with the defaults: the decision log on), warmed up, then `count` minutes. */
    const soak = async (count: number, label: (minute: number) => string) => {
      const server = await startGatehouse(ctx.res, { dataDir: setup.dataDir, pdp: true });
      const pid = server.proc.child.pid;
      const url = server.pdpUrl as string;
      const plan = allowedPlan(url, setup.envKey, checks, "pdp", "rbac");
      const check = sampler(new Api(url, setup.envKey), checks);
      const warm = await runWrk(plan, 16, WARMUP_SECONDS, check);
      if (warm.problems.length > 0) fail(`warm-up: ${warm.problems.join("; ")}`);
      const rows: SoakMinute[] = [];
      for (let minute = 1; minute <= count; minute++) {
        const before = cpuTimes(pid);
        const load = await runWrk(plan, concurrency, SLICE_SECONDS, check);
        const after = cpuTimes(pid);
        if (load.problems.length > 0)
          fail(`${label(minute)}: wrong or failed answers under load:\n  ${load.problems.join("\n  ")}`);
        const log = logSize(file);
        const row: SoakMinute = {
          minute,
          rps: load.rps,
          p50_us: load.latency_us.p50,
          p99_us: load.latency_us.p99,
          loop_cpu_us: before && after ? (after.mainUs - before.mainUs) / load.requests : NaN,
          rss_bytes: rssBytes(pid),
          log_rows: log.rows,
          log_decisions: log.decisions,
          db_bytes: fileSize(file),
          wal_bytes: fileSize(`${file}-wal`),
          load_average: os.loadavg()[0] as number,
        };
        rows.push(row);
        ctx.log(
          `${label(minute)}: ${fmt(row.rps)} req/s, p99 ${ms(row.p99_us)}, RSS ${fmt(row.rss_bytes / MB)} MB, ` +
            `log ${fmt(row.log_decisions)} decisions in ${fmt(row.log_rows)} chunks, ` +
            `db ${fmt(row.db_bytes / MB)} MB + WAL ${fmt(row.wal_bytes / MB)} MB`,
        );
      }
      await server.proc.stop();
      return rows;
    };
    const minutes = await soak(slices, (minute) => `minute ${minute}`);
    // One more minute in a new process over the data the soak left: a fall that stays comes from what is stored, one
    // that goes from the process's own state.
    const restarted = (await soak(1, () => "restarted"))[0] as SoakMinute;
    const first = minutes[0] as SoakMinute;
    const last = minutes[minutes.length - 1] as SoakMinute;
    ctx.table({
      title: `Soak: one gatehouse serve under RBAC /allowed at c=${concurrency}, minute by minute`,
      columns: [
        "minute",
        "req/s",
        "vs first",
        "p50",
        "p99",
        "loop CPU / req",
        "RSS",
        "log decisions",
        "log chunks",
        "db + WAL",
        "load avg",
      ],
      rows: [...minutes, restarted].map((row) => [
        row === restarted ? "restarted" : row.minute,
        fmt(row.rps),
        ratio(row.rps, first.rps),
        ms(row.p50_us),
        ms(row.p99_us),
        `${row.loop_cpu_us.toFixed(1)} µs`,
        `${fmt(row.rss_bytes / MB)} MB`,
        fmt(row.log_decisions),
        fmt(row.log_rows),
        `${fmt(row.db_bytes / MB)} + ${fmt(row.wal_bytes / MB)} MB`,
        row.load_average.toFixed(1),
      ]),
      notes: [
        `One server started as npm start does (decision log on, SQLite), warmed up ${WARMUP_SECONDS} s at c=16, then ${slices} slices of ${SLICE_SECONDS} s of wrk back to back, every answer checked.`,
        "RSS, log and file sizes at the end of each minute; log decisions: the stored ones (those still queued are not counted).",
        "load avg: the machine's one-minute load average at the minute's end; on 2 cores shared with other work, req/s follows it, while event-loop CPU per request moves less.",
        "restarted: one more minute in a new server over the data the soak left (warmed up alike): whether a fall stays with the stored data or goes with the process.",
      ],
    });
    return { concurrency, minutes, restarted, last_over_first: last.rps / first.rps };
  },
  goals(data) {
    const first = data?.minutes[0];
    const last = data?.minutes[data.minutes.length - 1];
    const full = (data?.minutes.length ?? 0) >= 10;
    return [
      judge(
        "PDP throughput: last minute of a 10-minute soak at least 95% of the first",
        data && first && last && full ? data.last_over_first >= 0.95 : undefined,
        `${((data?.last_over_first ?? 0) * 100).toFixed(0)}% (${fmt(first?.rps)} -> ${fmt(last?.rps)} req/s; ` +
          `RSS ${fmt((first?.rss_bytes ?? 0) / MB)} -> ${fmt((last?.rss_bytes ?? 0) / MB)} MB)`,
      ),
    ];
  },
};
