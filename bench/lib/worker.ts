import { spawn } from "node:child_process";
import { REPO_ROOT } from "./config.ts";

/** Runs bench/lib/engine-worker.ts in a fresh process with --expose-gc and returns its RESULT. */
export async function runEngineWorker(args: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        "--expose-gc",
        "--max-old-space-size=12288",
        "--import",
        "tsx",
        "bench/lib/engine-worker.ts",
        JSON.stringify(args),
      ],
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
