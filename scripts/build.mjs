// The build (npm run build; `prepare` runs it on npm install): src/ bundled by esbuild into dist/main.js, the
// packages left as imports, each command's code in a chunk of its own that main.js imports when the command runs
// (so `gatehouse help` loads no server), the webhook sender's thread an entry of its own (sharing the chunks it
// imports; webhooks.sender-thread.ts finds it beside itself), and the SQLite worker copied beside them
// (sqlite-thread.ts finds it beside itself).
// bin/gatehouse.js runs dist/ and rebuilds it first when a file under src/ is newer. Plain JavaScript, so that it
// runs before anything is built.
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DIST_MAIN = path.join(ROOT, "dist", "main.js");
const SRC = path.join(ROOT, "src");
const WORKER = "sqlite-thread.worker.mjs";

/** The newest modification time (ms) of a file under src/ or of this script. */
function newestSource() {
  let newest = fs.statSync(fileURLToPath(import.meta.url)).mtimeMs;
  for (const entry of fs.readdirSync(SRC, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const mtime = fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/** Why dist/ cannot be run as it is ("missing", "stale"), or undefined when it is up to date. */
export function distState() {
  if (!fs.existsSync(DIST_MAIN) || !fs.existsSync(path.join(ROOT, "dist", WORKER))) return "missing";
  return fs.statSync(DIST_MAIN).mtimeMs < newestSource() ? "stale" : undefined;
}

/**
 * Builds dist/. Each file is written under a temporary name and renamed, so that two processes building at once
 * (or one starting meanwhile) never see half a file.
 */
export async function buildDist() {
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [
      path.join(SRC, "main.ts"),
      path.join(SRC, "modules", "webhooks", "webhooks.sender.worker.ts"),
    ],
    outdir: path.dirname(DIST_MAIN),
    entryNames: "[name]",
    chunkNames: "[name]-[hash]",
    splitting: true,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "linked",
    sourcesContent: false,
    write: false,
    logLevel: "silent",
  });
  fs.mkdirSync(path.dirname(DIST_MAIN), { recursive: true });
  const files = [
    ...result.outputFiles.map((file) => ({ to: file.path, contents: file.contents })),
    { to: path.join(ROOT, "dist", WORKER), contents: fs.readFileSync(path.join(SRC, "db", WORKER)) },
  ];
  // main.js last: its modification time says when the whole build was complete.
  files.sort((a, b) => Number(a.to === DIST_MAIN) - Number(b.to === DIST_MAIN));
  for (const { to, contents } of files) {
    const temporary = `${to}.${process.pid}.tmp`;
    fs.writeFileSync(temporary, contents);
    fs.renameSync(temporary, to);
  }
  // Chunks of earlier builds.
  const written = new Set(files.map((file) => path.basename(file.to)));
  for (const name of fs.readdirSync(path.dirname(DIST_MAIN))) {
    if (!written.has(name) && /\.js(\.map)?$/.test(name))
      fs.rmSync(path.join(path.dirname(DIST_MAIN), name), { force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  await buildDist();
  process.stdout.write(`gatehouse: built dist/ in ${Date.now() - started} ms\n`);
}
