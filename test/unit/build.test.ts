import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "../helpers/process.ts";

/**
 * The build and the launcher on a copy: scripts/build.mjs and bin/gatehouse.js over a three-file src/, so the
 * checkout's own dist/ is left alone. dist/ is built when missing, run when up to date, rebuilt with one line
 * when a file under src/ is newer.
 */
test("bin/gatehouse.js runs dist/, building it when missing and rebuilding it when src/ is newer", async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-build-"));
  try {
    for (const file of ["scripts/build.mjs", "bin/gatehouse.js", "src/db/sqlite-thread.worker.mjs"]) {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.copyFileSync(path.join(REPO_ROOT, file), path.join(root, file));
    }
    fs.writeFileSync(path.join(root, "package.json"), '{ "type": "module" }');
    fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(root, "node_modules"));
    const main = path.join(root, "src", "main.ts");
    fs.writeFileSync(main, 'const greeting: string = "first";\nconsole.log(greeting);\n');
    const sender = path.join(root, "src", "modules", "webhooks", "webhooks.sender.worker.ts");
    fs.mkdirSync(path.dirname(sender), { recursive: true });
    fs.writeFileSync(sender, 'const thread: string = "sender";\nconsole.log(thread);\n');
    const run = () =>
      spawnSync(process.execPath, [path.join(root, "bin", "gatehouse.js")], { encoding: "utf8" });

    const build = (await import(pathToFileURL(path.join(root, "scripts", "build.mjs")).href)) as {
      distState(): string | undefined;
    };
    assert.equal(build.distState(), "missing");
    const first = run();
    assert.equal(first.stdout, "first\n");
    assert.match(first.stderr, /^gatehouse: dist\/ was missing; rebuilt dist\/ in \d+ ms\n$/);
    assert.ok(fs.existsSync(path.join(root, "dist", "sqlite-thread.worker.mjs")), "the worker is copied");
    assert.ok(fs.existsSync(path.join(root, "dist", "webhooks.sender.worker.js")), "the sender is built");
    assert.equal(build.distState(), undefined);

    const again = run();
    assert.equal(again.stdout, "first\n");
    assert.equal(again.stderr, "", "an up-to-date build runs as it is");

    fs.writeFileSync(main, 'console.log("edited");\n');
    const later = new Date(Date.now() + 5_000);
    fs.utimesSync(main, later, later);
    assert.equal(build.distState(), "stale");
    const edited = run();
    assert.equal(edited.stdout, "edited\n", "never the stale code");
    assert.match(
      edited.stderr,
      /^gatehouse: src\/ changed since the last build; rebuilt dist\/ in \d+ ms\n$/,
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
