import { spawn } from "node:child_process";
import { REPO_ROOT } from "./config.ts";

/** Runs a worker script (bench/lib/engine-worker.ts unless named) in a fresh process with --expose-gc and returns its RESULT. */
export async function runEngineWorker(
  args: Record<string, unknown>,
  script = "bench/lib/engine-worker.ts",
): Promise<Record<string, unknown>> {
  return runWorker(["--expose-gc", "--max-old-space-size=12288"], script, [JSON.stringify(args)]);
}

/** Runs `script` (a bench worker printing one "RESULT <json>" line) in a fresh process; `stdin` is its input. */
export async function runWorker(
  nodeFlags: string[],
  script: string,
  argv: string[],
  stdin?: string,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, "--import", "tsx", script, ...argv], {
      cwd: REPO_ROOT,
      stdio: "pipe",
    });
    child.stdin.end(stdin ?? "");
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.split("\n").find((candidate) => candidate.startsWith("RESULT "));
      if (code !== 0 || !line) reject(new Error(`${script} exited ${code}:\n${out.slice(-4000)}`));
      else resolve(JSON.parse(line.slice(7)) as Record<string, unknown>);
    });
  });
}
