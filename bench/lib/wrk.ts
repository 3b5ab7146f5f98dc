import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BENCH_DIR } from "./config.ts";
import { median } from "./stats.ts";

/** One prepared request: what the load generator sends and what the answer must be. */
export interface WrkRequest {
  method: string;
  path: string;
  body?: string;
  /** pdp: "1"/"0"; bulk: the decision pattern; cerbos: "1"/"0"; otherwise "-". */
  expect?: string;
  /** `{n}` in path and body becomes a number unique in the run. */
  template?: boolean;
}

export interface WrkPlan {
  url: string;
  mode: "pdp" | "bulk" | "cerbos" | "status" | "none";
  /** pdp: the reason kind every allow must name. */
  kind?: string;
  /** status mode: accepted codes. */
  statuses?: number[];
  headers: Record<string, string>;
  requests: WrkRequest[];
}

export interface WrkResult {
  connections: number;
  seconds: number;
  requests: number;
  rps: number;
  decisions: number;
  decisions_per_s: number;
  latency_us: { mean: number; p50: number; p90: number; p95: number; p99: number; max: number };
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  checks: Record<string, number>;
  /** Problems found in the answers; a non-empty list fails the scenario. */
  problems: string[];
}

let checked = false;

/** wrk from Debian; installed with apt-get when missing (the machine's user is root). */
export function ensureWrk(): void {
  if (checked) return;
  const has = () => {
    try {
      execFileSync("wrk", ["--version"], { stdio: "ignore" });
      return true;
    } catch (e) {
      // wrk --version exits 1 after printing its banner; only a missing binary throws ENOENT
      return (e as NodeJS.ErrnoException).code !== "ENOENT";
    }
  };
  if (!has()) {
    console.log("wrk is missing: apt-get install -y wrk");
    try {
      execFileSync("apt-get", ["install", "-y", "-qq", "wrk"], { stdio: "inherit" });
    } catch {
      execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
      execFileSync("apt-get", ["install", "-y", "-qq", "wrk"], { stdio: "inherit" });
    }
    if (!has()) throw new Error("wrk could not be installed (apt-get install -y wrk)");
  }
  checked = true;
}

function writePlan(plan: WrkPlan): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-bench-wrk-")), "plan.tsv");
  const clean = (value: string) => {
    if (/[\t\n\r]/.test(value))
      throw new Error(`a wrk plan field holds a tab or newline: ${value.slice(0, 80)}`);
    return value;
  };
  const lines = [`M\t${plan.mode}`];
  if (plan.kind) lines.push(`K\t${plan.kind}`);
  if (plan.statuses) lines.push(`S\t${plan.statuses.join(",")}`);
  for (const [k, value] of Object.entries(plan.headers)) lines.push(`H\t${clean(k)}\t${clean(value)}`);
  for (const request of plan.requests) {
    lines.push(
      [
        request.template ? "T" : "R",
        clean(request.expect ?? "-"),
        request.method,
        clean(request.path),
        clean(request.body ?? ""),
      ].join("\t"),
    );
  }
  fs.writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

/**
 * Runs wrk (one thread: on two cores the other belongs to the server) against `plan` and checks the answers
 * the Lua script counted. A `sampler` runs beside the load (e.g. a client checking decisions one by one).
 */
export async function runWrk(
  plan: WrkPlan,
  connections: number,
  seconds: number,
  sampler?: (signal: AbortSignal) => Promise<void>,
): Promise<WrkResult> {
  ensureWrk();
  const file = writePlan(plan);
  const args = [
    "-t1",
    `-c${connections}`,
    `-d${seconds}s`,
    "--timeout",
    "10s",
    "-s",
    path.join(BENCH_DIR, "lib", "checks.lua"),
    plan.url,
    "--",
    file,
  ];
  const stop = new AbortController();
  let samplerError: unknown;
  const sampling = sampler?.(stop.signal).catch((error: unknown) => (samplerError = error));
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}:\n${out}`)),
    );
  });
  stop.abort();
  await sampling;
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  const line = output.split("\n").find((candidate) => candidate.startsWith("WRK_RESULT "));
  if (!line) throw new Error(`wrk printed no result:\n${output}`);
  const raw = JSON.parse(line.slice("WRK_RESULT ".length)) as {
    requests: number;
    duration_us: number;
    errors: WrkResult["errors"];
    latency_us: WrkResult["latency_us"];
    checks: Record<string, number>;
  };
  const secs = raw.duration_us / 1e6;
  const checks = raw.checks;
  const get = (k: string) => checks[k] ?? 0;
  const problems: string[] = [];
  const errs = raw.errors;
  const socketErrors = errs.connect + errs.read + errs.write + errs.timeout;
  if (socketErrors > 0) problems.push(`socket errors: ${JSON.stringify(errs)}`);
  if (get("bad_status") > 0) {
    problems.push(
      `${get("bad_status")} answers with an unexpected status (the first: ${get("first_bad_status")})`,
    );
  }
  if (get("unparsed") > 0) problems.push(`${get("unparsed")} answers without a decision`);
  if (get("mismatch") > 0) problems.push(`${get("mismatch")} answers with wrong decisions`);
  if (get("wrong_kind") > 0)
    problems.push(`${get("wrong_kind")} allows with a reason other than ${plan.kind}`);
  if (plan.mode === "pdp") {
    // Answers cannot be matched to requests one by one here (wrk does not say which connection answered), so the
    // allows and denies received must match those sent, up to the requests still in flight when wrk stopped.
    const allowGap = get("sent_allow") - get("got_allow");
    const denyGap = get("sent_deny") - get("got_deny");
    // wrk may also have generated one request per thread that it never sent when the time ran out
    const inFlight = connections + 1 + socketErrors;
    if (allowGap < 0 || denyGap < 0 || allowGap + denyGap > inFlight) {
      problems.push(
        `decision counts do not match the requests: sent ${get("sent_allow")} allow/${get("sent_deny")} deny, ` +
          `got ${get("got_allow")}/${get("got_deny")}`,
      );
    }
  }
  if (plan.mode === "cerbos" && get("checked") === 0) problems.push("no Cerbos answer could be read");
  if (raw.requests === 0) problems.push("no request completed");
  if (samplerError !== undefined) problems.push(`sampled check failed: ${String(samplerError)}`);
  const decisions = plan.mode === "none" || plan.mode === "status" ? raw.requests : get("decisions");
  return {
    connections,
    seconds: secs,
    requests: raw.requests,
    rps: raw.requests / secs,
    decisions,
    decisions_per_s: decisions / secs,
    latency_us: raw.latency_us,
    errors: raw.errors,
    checks: checks,
    problems,
  };
}

/** Several runs of one load as one: throughput over the summed time, the median of their percentiles. */
export function combine(runs: WrkResult[]): WrkResult {
  const requests = runs.reduce((sum, run) => sum + run.requests, 0);
  const seconds = runs.reduce((sum, run) => sum + run.seconds, 0);
  const first = runs[0] as WrkResult;
  const lat = (k: keyof WrkResult["latency_us"]) => median(runs.map((run) => run.latency_us[k]));
  return {
    ...first,
    seconds,
    requests,
    rps: requests / seconds,
    decisions: requests,
    decisions_per_s: requests / seconds,
    latency_us: {
      mean: lat("mean"),
      p50: lat("p50"),
      p90: lat("p90"),
      p95: lat("p95"),
      p99: lat("p99"),
      max: lat("max"),
    },
    problems: runs.flatMap((run) => run.problems),
  };
}
