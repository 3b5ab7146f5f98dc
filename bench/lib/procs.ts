import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "./config.ts";

/** A port the OS had free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let clockTicks: number | undefined;

/**
 * CPU time a process has used, in µs: its main thread (a Node server's event loop) and all its threads, from
 * /proc (Linux; undefined elsewhere). The kernel counts in clock ticks (10 ms): use it over seconds of load.
 */
export function cpuTimes(pid: number | undefined): { mainUs: number; processUs: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    const ticks = (stat: string) => {
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return Number(fields[11]) + Number(fields[12]); // utime + stime
    };
    const us = (count: number) => (count * 1e6) / (clockTicks as number);
    return {
      mainUs: us(ticks(fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8"))),
      processUs: us(ticks(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))),
    };
  } catch {
    return undefined;
  }
}

export interface Proc {
  name: string;
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

const live = new Set<Resources>();

/**
 * What one scenario started: processes, temp dirs and clean-up steps. `close()` ends them all (also when the
 * scenario failed); Ctrl-C closes every open scope.
 */
export class Resources {
  private procs: Proc[] = [];
  private dirs: string[] = [];
  private deferred: (() => Promise<void> | void)[] = [];

  constructor() {
    live.add(this);
  }

  tempDir(prefix: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gatehouse-bench-${prefix}-`));
    this.dirs.push(dir);
    return dir;
  }

  defer(fn: () => Promise<void> | void): void {
    this.deferred.push(fn);
  }

  spawn(name: string, command: string, args: string[], env: Record<string, string> = {}): Proc {
    const child = spawn(command, args, {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const keep = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.length > 200_000) out = out.slice(-100_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const exited = new Promise<number | null>((resolve) => {
      child.once("exit", (code) => resolve(code));
      child.once("error", (error) => {
        out += String(error);
        resolve(-1);
      });
    });
    const proc: Proc = {
      name,
      child,
      output: () => out,
      exited,
      async stop() {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      },
    };
    this.procs.push(proc);
    return proc;
  }

  async close(): Promise<void> {
    live.delete(this);
    for (const proc of this.procs.reverse()) await proc.stop().catch(() => {});
    for (const fn of this.deferred.reverse()) {
      try {
        await fn();
      } catch (e) {
        console.error(`clean-up step failed: ${String(e)}`);
      }
    }
    for (const dir of this.dirs) fs.rmSync(dir, { recursive: true, force: true });
    this.procs = [];
    this.deferred = [];
    this.dirs = [];
  }
}

export async function closeAll(): Promise<void> {
  for (const resources of [...live]) await resources.close();
}

/** Polls `url` until it answers 2xx; fails early when the process exits. */
export async function waitReady(proc: Proc, url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null)
      throw new Error(`${proc.name} exited early (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${proc.name} did not become ready at ${url}:\n${proc.output()}`);
    await sleep(100);
  }
}

export const BOOTSTRAP_KEY = "bench-bootstrap-admin-key-0000000000000000";
const SECRET_KEY = "bench-secret-key-that-is-long-enough-0000";

export interface GatehouseOptions {
  dataDir: string;
  databaseUrl?: string;
  pdp?: boolean;
  env?: Record<string, string>;
  /** Extra node flags, e.g. --cpu-prof (BENCH_SERVER_NODE_FLAGS adds to every server). */
  nodeFlags?: string[];
}

export interface Gatehouse {
  proc: Proc;
  apiUrl: string;
  pdpUrl: string | undefined;
}

const serverFlags = () => (process.env["BENCH_SERVER_NODE_FLAGS"] ?? "").split(" ").filter(Boolean);

/** `gatehouse serve` in its own process, as `npm start` runs it. */
export async function startGatehouse(res: Resources, options: GatehouseOptions): Promise<Gatehouse> {
  const apiPort = await freePort();
  const pdpPort = options.pdp ? await freePort() : 0;
  const proc = res.spawn(
    "gatehouse serve",
    process.execPath,
    [...serverFlags(), ...(options.nodeFlags ?? []), "--import", "tsx", "src/main.ts", "serve"],
    {
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_API_PORT: String(apiPort),
      GATEHOUSE_PDP_PORT: String(pdpPort),
      GATEHOUSE_OPA_PORT: "0",
      GATEHOUSE_DATA_DIR: options.dataDir,
      DATABASE_URL: options.databaseUrl ?? "",
      REDIS_URL: "",
      GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP_KEY,
      GATEHOUSE_SECRET_KEY: SECRET_KEY,
      GATEHOUSE_RATE_LIMIT_PER_MINUTE: "1000000000",
      GATEHOUSE_LOG_LEVEL: "warn",
      GATEHOUSE_API_LOG: "on",
      GATEHOUSE_BODY_LIMIT_BYTES: String(64 * 1024 * 1024),
      ...options.env,
    },
  );
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  await waitReady(proc, `${apiUrl}/readyz`);
  const pdpUrl = options.pdp ? `http://127.0.0.1:${pdpPort}` : undefined;
  if (pdpUrl) await waitReady(proc, `${pdpUrl}/health`);
  return { proc, apiUrl, pdpUrl };
}

/**
 * The log's state in the `i`-th server of an A/B whose servers run one after another: on, off, off, on, then again,
 * so that drift in the machine's speed hits both states alike. Servers `2k` and `2k + 1` make block `k`.
 */
export const abServerMode = (i: number): "on" | "off" => (i % 4 === 0 || i % 4 === 3 ? "on" : "off");

/** `gatehouse pdp`: a standalone PDP following a control plane. */
export async function startStandalonePdp(
  res: Resources,
  options: { controlPlane: string; apiKey: string; dataDir: string; readyTimeoutMs?: number },
): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = res.spawn(
    "gatehouse pdp",
    process.execPath,
    [...serverFlags(), "--import", "tsx", "src/main.ts", "pdp"],
    {
      GATEHOUSE_HOST: "127.0.0.1",
      GATEHOUSE_PDP_PORT: String(port),
      GATEHOUSE_OPA_PORT: "0",
      GATEHOUSE_DATA_DIR: options.dataDir,
      GATEHOUSE_CONTROL_PLANE_URL: options.controlPlane,
      GATEHOUSE_PDP_API_KEY: options.apiKey,
      GATEHOUSE_LOG_LEVEL: "warn",
    },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitReady(proc, `${url}/ready`, options.readyTimeoutMs);
  return { proc, url };
}
