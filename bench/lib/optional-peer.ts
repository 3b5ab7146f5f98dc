import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { BENCH_DIR } from "./config.ts";

/**
 * Where peers the bench compares against, but that are not in package.json, are installed: their own folder
 * (ignored by git) with its own node_modules, so installing one never changes the project's node_modules (an
 * `npm install --no-save` there reifies the whole tree, and the next `npm ci` removes the peer again).
 */
export const PEERS_DIR = path.join(BENCH_DIR, ".peers");

/** `require` as from the peers' folder: resolves what is installed there. */
export const peerRequire = createRequire(path.join(PEERS_DIR, "package.json"));

/**
 * A peer not in package.json, because its install would make every `npm ci` warn (SpiceDB's package declares
 * Node 24 and ships install scripts): installed into PEERS_DIR the first time a scenario needs it, as `wrk` is
 * with apt-get.
 */
export function ensureOptionalPeer(name: string, version: string): void {
  // Read as a file: a package's `exports` may not name its package.json.
  const manifestOf = path.join(PEERS_DIR, "node_modules", name, "package.json");
  const installed = fs.existsSync(manifestOf)
    ? (JSON.parse(fs.readFileSync(manifestOf, "utf8")) as { version?: string }).version
    : undefined;
  if (installed === version) return;
  console.log(`${name} is missing: npm install ${name}@${version} in ${PEERS_DIR}`);
  try {
    fs.mkdirSync(PEERS_DIR, { recursive: true });
    const manifest = path.join(PEERS_DIR, "package.json");
    if (!fs.existsSync(manifest))
      fs.writeFileSync(manifest, `${JSON.stringify({ name: "bench-peers", private: true })}\n`);
    execFileSync("npm", ["install", "--no-audit", "--no-fund", `${name}@${version}`], {
      cwd: PEERS_DIR,
      stdio: "inherit",
    });
  } catch {
    // the scenario reports the peer as missing and goes on
  }
}
