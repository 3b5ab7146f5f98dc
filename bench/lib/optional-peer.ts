import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { REPO_ROOT } from "./config.ts";

/**
 * A peer the bench compares against that is not in package.json, because its install would make every `npm ci`
 * warn (SpiceDB's package declares Node 24 and ships install scripts): installed here, with `--no-save`, the first
 * time a scenario needs it, as `wrk` is with apt-get.
 */
export function ensureOptionalPeer(name: string, version: string): void {
  const require = createRequire(import.meta.url);
  try {
    require.resolve(`${name}/package.json`);
    return;
  } catch {
    console.log(`${name} is missing: npm install --no-save ${name}@${version}`);
  }
  try {
    execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", `${name}@${version}`], {
      cwd: REPO_ROOT,
      stdio: "inherit",
    });
  } catch {
    // the scenario reports the peer as missing and goes on
  }
}
