import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export async function freePort(): Promise<number> {
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

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  output(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts a server on a port found free. Another process (tests run in parallel) may take that port before the
 * server binds it; then the server exits with EADDRINUSE and a fresh port is tried.
 */
async function onFreePort<T>(start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (error) {
      if (attempt === 3 || !String(error).includes("EADDRINUSE")) throw error;
    }
  }
}

/**
 * Starts `gatehouse serve` the way `npm start` does, and waits until /readyz answers. With `port`, on that port
 * (a control plane coming back where its PDPs look for it), else on one found free.
 */
export async function startServerProcess(
  env: Record<string, string>,
  args: string[] = [],
  options: { pdp?: boolean; port?: number } = {},
): Promise<ServerProcess & { pdpPort: number }> {
  const given = options.port;
  const onPort = given === undefined ? onFreePort : <T>(start: (port: number) => Promise<T>) => start(given);
  return onPort(async (port) => {
    // With `pdp`, the embedded PDP listens on a port found free too, picked again on a retry.
    const pdpPort = options.pdp ? await freePort() : 0;
    const server = await startGatehouse(
      ["serve", ...args],
      { GATEHOUSE_API_PORT: String(port), GATEHOUSE_PDP_PORT: String(pdpPort), ...env },
      port,
      "/readyz",
    );
    return { ...server, pdpPort };
  });
}

/** Starts `gatehouse pdp` (a standalone PDP) and waits until its /ready answers. */
export async function startPdpProcess(
  env: Record<string, string>,
  args: string[] = [],
): Promise<ServerProcess> {
  return onFreePort((port) =>
    startGatehouse(
      ["pdp", ...args],
      { GATEHOUSE_PDP_PORT: String(port), GATEHOUSE_OPA_PORT: "0", ...env },
      port,
      "/ready",
    ),
  );
}

async function startGatehouse(
  args: string[],
  env: Record<string, string>,
  port: number,
  readyPath: string,
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, GATEHOUSE_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}):\n${out}`);
    try {
      const res = await fetch(`${baseUrl}${readyPath}`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    port,
    baseUrl,
    output: () => out,
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** One JSON request over real HTTP to a started server; asserts a 2xx answer. */
export async function httpOk(base: string, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${url} -> ${res.status} ${text}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { json: (text ? JSON.parse(text) : undefined) as any, headers: res.headers };
}

/** Runs one `gatehouse` command to its end (through tsx, as the tests run the TypeScript); its exit code and output. */
export async function runGatehouse(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, GATEHOUSE_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, ms: Date.now() - started };
}
