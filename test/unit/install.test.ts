import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import semver from "semver";
import { REPO_ROOT } from "../helpers/process.ts";

/**
 * The README promises that `npm ci` on Node 20 prints no warning: every package it installs accepts Node 20 (no
 * EBADENGINE) and every install script it would run is approved in `allowScripts` (no install-scripts warning).
 * Read from the lockfile, which is exactly what `npm ci` installs.
 */
interface LockedPackage {
  engines?: Record<string, string> | string[];
  hasInstallScript?: boolean;
}
const lock = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, LockedPackage>;
};
const manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
  engines: { node: string };
  allowScripts: Record<string, boolean>;
};
const installed = Object.entries(lock.packages).filter(([where]) => where !== "");
const nameOf = (where: string) => where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length);

test("every locked package accepts the oldest Node the package.json allows", () => {
  const oldest = semver.minVersion(manifest.engines.node)?.version;
  assert.ok(oldest, `package.json's engines.node is a range: ${manifest.engines.node}`);
  const refused = installed.flatMap(([where, pkg]) => {
    const range = Array.isArray(pkg.engines) ? undefined : pkg.engines?.["node"];
    return range && !semver.satisfies(oldest, range) ? [`${nameOf(where)} wants node ${range}`] : [];
  });
  assert.deepEqual(refused, []);
});

test("every locked package with an install script is approved in allowScripts", () => {
  const unapproved = installed
    .filter(([, pkg]) => pkg.hasInstallScript)
    .map(([where]) => nameOf(where))
    .filter((name) => manifest.allowScripts[name] !== true);
  assert.deepEqual(unapproved, []);
});
