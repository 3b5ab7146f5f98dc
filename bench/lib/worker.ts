import { spawn } from "node:child_process";
import { REPO_ROOT } from "./config.ts";

/** Runs a worker script (bench/lib/engine-worker.ts unless named) in a fresh process with --expose-gc and returns its RESULT. */
export async function runEngineWorker(
  args: Record<string, unknown>,
  script = "bench/lib/engine-worker.ts",
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--expose-gc", "--max-old-space-size=12288", "--import", "tsx", script, JSON.stringify(args)],
      { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.split("\n").find((candidate) => candidate.startsWith("RESULT "));
      if (code !== 0 || !line) reject(new Error(`engine worker exited ${code}:\n${out.slice(-4000)}`));
      else resolve(JSON.parse(line.slice(7)) as Record<string, unknown>);
    });
  });
}
