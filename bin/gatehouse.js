#!/usr/bin/env node
// Runs the build in dist/ (npm install builds it). When dist/ is missing or a file under src/ is newer, it is
// rebuilt first, with one line saying so; without esbuild the TypeScript runs through tsx instead.
import { buildDist, distState, DIST_MAIN } from "../scripts/build.mjs";
import process from "node:process";
import { pathToFileURL, URL } from "node:url";

process.setSourceMapsEnabled(true);
const state = distState();
let entry = pathToFileURL(DIST_MAIN).href;
if (state) {
  const started = Date.now();
  try {
    await buildDist();
    process.stderr.write(
      `gatehouse: ${state === "missing" ? "dist/ was missing" : "src/ changed since the last build"}; rebuilt dist/ in ${Date.now() - started} ms\n`,
    );
  } catch (error) {
    process.stderr.write(
      `gatehouse: could not build dist/ (${error instanceof Error ? error.message.split("\n")[0] : String(error)}); running src/ through tsx\n`,
    );
    const { register } = await import("tsx/esm/api");
    register();
    entry = new URL("../src/main.ts", import.meta.url).href;
  }
}
await import(entry);
