import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, REPO_ROOT } from "../helpers/process.ts";

/**
 * The README's quick start, run as written: its shell blocks are read from README.md, so the two cannot drift.
 * The first block is `npm install && npm start` (the install is the test run's own; `npm start` runs as written);
 * the next runs in bash with the ports found free and the key the start printed put where the README has
 * 127.0.0.1:8000, 127.0.0.1:7766 and `gh_...`. A `# ...` line after a command is the start of its answer.
 */

function quickStartBlocks(): string[] {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(
    readme.indexOf("## Quick start"),
    readme.indexOf("\n## ", readme.indexOf("## Quick start") + 1),
  );
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

/** Each command (lines joined at a trailing backslash) with the answer the README shows under it, if any. */
function commands(block: string): { command: string; expect?: string }[] {
  const out: { command: string; expect?: string }[] = [];
  for (const line of block.replace(/\\\n\s*/g, "").split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("# ")) {
      const last = out.at(-1);
      assert.ok(last && last.expect === undefined, `an answer line follows a command: ${line}`);
      last.expect = line.slice(2).replace(/\.\.\.\}$/, "");
      continue;
    }
    out.push({ command: line });
  }
  return out;
}

test("the README quick start runs as written: npm start, the key, gatehouse demo and the example checks", async () => {
  const blocks = quickStartBlocks();
  assert.equal(blocks[0]?.trim(), "npm install && npm start");
  assert.ok(blocks[1], "a second block with the commands to try");
  const steps = commands(blocks[1]);
  assert.ok(steps.filter((s) => s.command.includes("/allowed")).length >= 4, "the example checks");

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-quick-start-"));
  const [apiPort, pdpPort, opaPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    ...process.env,
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_API_PORT: String(apiPort),
    GATEHOUSE_PDP_PORT: String(pdpPort),
    GATEHOUSE_OPA_PORT: String(opaPort),
    GATEHOUSE_LOG_LEVEL: "warn",
  };
  // `npm start` as written, in its own process group so that stopping it stops the server under npm.
  const server = spawn("sh", ["-c", "npm start"], {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  server.stdout.on("data", (d: Buffer) => (output += d.toString()));
  server.stderr.on("data", (d: Buffer) => (output += d.toString()));
  try {
    const deadline = Date.now() + 90_000;
    while (!/is running[\s\S]*data {7}\S+/.test(output)) {
      assert.ok(server.exitCode === null, `npm start exited:\n${output}`);
      assert.ok(Date.now() < deadline, `npm start did not print the running block:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const key = /\b(gh_us_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/.exec(output)?.[1];
    assert.ok(key, output);
    for (const line of [
      `API        http://127.0.0.1:${apiPort}/v2`,
      `PDP        http://127.0.0.1:${pdpPort}`,
    ]) {
      assert.ok(output.includes(line), `the running block has "${line}":\n${output}`);
    }

    const fill = (command: string) =>
      command
        .replaceAll("gh_...", key)
        .replaceAll("127.0.0.1:8000", `127.0.0.1:${apiPort}`)
        .replaceAll("127.0.0.1:7766", `127.0.0.1:${pdpPort}`);
    const script = [
      "set -euo pipefail",
      ...steps.flatMap((s, i) => [`printf '\\n@@%d@@\\n' ${i}`, fill(s.command)]),
    ].join("\n");
    const run = spawnSync("bash", ["-c", script], {
      cwd: REPO_ROOT,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    assert.equal(run.status, 0, `the commands ran:\n${run.stdout}\n${run.stderr}`);
    const answers = run.stdout.split(/\n@@\d+@@\n/).slice(1);
    assert.equal(answers.length, steps.length);
    steps.forEach((step, i) => {
      if (step.expect === undefined) return;
      const answer = (answers[i] as string).trim();
      assert.ok(
        answer.startsWith(step.expect),
        `${step.command}\n  answered ${answer}\n  README shows ${step.expect}`,
      );
    });
    assert.match(run.stderr, /Created the example project "demo"/, "the demo says what it made");
  } finally {
    if (server.pid !== undefined && server.exitCode === null) {
      process.kill(-server.pid, "SIGTERM");
      await new Promise((resolve) => server.once("exit", resolve));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
