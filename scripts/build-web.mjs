// Builds the dashboard (web/) into web/dist, which the API server serves at `/`: the API's types from
// docs/openapi.json, the Vite build, a .gz and .br of each text file (served to browsers that accept them), and
// the compressed size of the JavaScript the first page loads, which must stay under 400 KB.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import console from "node:console";
import process from "node:process";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const web = path.join(root, "web");
const dist = path.join(web, "dist");
const FIRST_PAGE_LIMIT = 400 * 1024;

export function writeApiTypes() {
  const cli = path.join(root, "node_modules", "openapi-typescript", "bin", "cli.js");
  execFileSync(process.execPath, [cli, "docs/openapi.json", "-o", "web/src/api/openapi.d.ts", "--silent"], {
    cwd: root,
    stdio: "inherit",
  });
}

function compressAll(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) compressAll(file);
    else if (/\.(js|css|html|svg|json)$/.test(entry.name)) {
      const content = fs.readFileSync(file);
      fs.writeFileSync(`${file}.gz`, zlib.gzipSync(content, { level: 9 }));
      fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(content));
    }
  }
}

const gzipSize = (file) => fs.statSync(path.join(dist, `${file}.gz`)).size;

/**
 * The JavaScript a first visit loads at most, gzip-compressed: the entry with its static imports, plus the
 * heaviest page (a route's chunk with the chunks it imports), from Vite's manifest.
 */
function firstPageScripts() {
  const manifest = JSON.parse(fs.readFileSync(path.join(dist, ".vite", "manifest.json"), "utf8"));
  // A page counts with what it loads later itself (the API log's chart): a first visit there loads all of it.
  const closure = (key, seen = new Set(), lazyToo = false) => {
    const chunk = manifest[key];
    if (!chunk || seen.has(chunk.file)) return seen;
    seen.add(chunk.file);
    for (const imported of chunk.imports ?? []) closure(imported, seen, lazyToo);
    for (const imported of lazyToo ? (chunk.dynamicImports ?? []) : []) closure(imported, seen, lazyToo);
    return seen;
  };
  const entryKey = Object.keys(manifest).find((key) => manifest[key].isEntry);
  const entry = closure(entryKey);
  const sum = (files) => [...files].reduce((total, file) => total + gzipSize(file), 0);
  const pages = Object.keys(manifest)
    .filter((key) => manifest[key].isDynamicEntry)
    .map((key) => ({
      key,
      files: [...closure(key, new Set(entry), true)].filter((file) => !entry.has(file)),
    }))
    .map((page) => ({ ...page, size: sum(page.files) }))
    .sort((a, b) => b.size - a.size);
  return { entry: sum(entry), page: pages[0] ?? { key: "none", size: 0 } };
}

async function main() {
  writeApiTypes();
  const { build } = await import("vite");
  await build({ root: web, configFile: path.join(web, "vite.config.ts"), logLevel: "warn" });
  compressAll(dist);
  const { entry, page } = firstPageScripts();
  const total = entry + page.size;
  const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
  console.log(
    `dashboard built into web/dist; first page JavaScript at most ${kb(total)} gzip ` +
      `(entry ${kb(entry)}, heaviest page ${page.key} ${kb(page.size)})`,
  );
  if (total > FIRST_PAGE_LIMIT) {
    console.error(
      `error: the first page loads more than ${FIRST_PAGE_LIMIT / 1024} KB of compressed JavaScript`,
    );
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
