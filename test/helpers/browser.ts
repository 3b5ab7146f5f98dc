import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { chromium, type Browser, type Page, type Request } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import { REPO_ROOT } from "./process.ts";

/** Debian's chromium (.ci/run installs it); Playwright's own download cannot work here. */
export const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/** Why the browser tests cannot run, or undefined; under CI=true a missing browser is an error, not a skip. */
export function browserUnavailable(): string | undefined {
  if (fs.existsSync(CHROMIUM)) return undefined;
  const reason = `Chromium not found at ${CHROMIUM} (apt-get install chromium)`;
  if (process.env["CI"] === "true") throw new Error(`under CI=true the browser tests must run: ${reason}`);
  return reason;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}

const WEB = path.join(REPO_ROOT, "web");
const newestIn = (dir: string): number =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .map((entry) => {
      const file = path.join(dir, entry.name);
      return entry.isDirectory() ? newestIn(file) : fs.statSync(file).mtimeMs;
    })
    .reduce((a, b) => Math.max(a, b), 0);

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Builds the dashboard when web/dist is missing or older than its sources or the API document. Test files run in
 * parallel: one builds while holding a lock directory, the others wait for it and then find the build fresh.
 */
export function ensureDashboardBuilt(): void {
  const index = path.join(WEB, "dist", "index.html");
  const lock = path.join(WEB, ".build.lock");
  const fresh = () =>
    fs.existsSync(index) &&
    fs.statSync(index).mtimeMs >=
      Math.max(
        newestIn(path.join(WEB, "src")),
        newestIn(path.join(WEB, "public")),
        fs.statSync(path.join(WEB, "index.html")).mtimeMs,
        fs.statSync(path.join(REPO_ROOT, "docs/openapi.json")).mtimeMs,
      );
  for (const deadline = Date.now() + 300_000; !fresh();) {
    try {
      fs.mkdirSync(lock);
    } catch {
      // Another test file is building (a lock older than the deadline is a crashed one's and is taken over).
      if (Date.now() > deadline) fs.rmSync(lock, { recursive: true, force: true });
      sleep(500);
      continue;
    }
    try {
      if (!fresh())
        execFileSync(process.execPath, ["scripts/build-web.mjs"], { cwd: REPO_ROOT, stdio: "inherit" });
    } finally {
      fs.rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** The routes of docs/openapi.json as matchers of a method and a path. */
function openApiRoutes(): { method: string; pattern: RegExp; route: string }[] {
  const doc = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "docs/openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(doc.paths).flatMap(([route, operations]) =>
    Object.keys(operations).map((method) => ({
      method: method.toUpperCase(),
      route,
      pattern: new RegExp(`^${route.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    })),
  );
}

/**
 * Records every request a page makes; `assertPublicApiOnly` then checks each is a route of docs/openapi.json or
 * a file of the dashboard (its page for a navigation, its assets), on the server's origin.
 */
export class RequestLog {
  readonly requests: { method: string; url: string; type: string }[] = [];

  watch(page: Page): void {
    page.on("request", (request: Request) =>
      this.requests.push({ method: request.method(), url: request.url(), type: request.resourceType() }),
    );
  }

  assertPublicApiOnly(origin: string): void {
    const routes = openApiRoutes();
    assert.ok(this.requests.length > 0);
    for (const { method, url, type } of this.requests) {
      const parsed = new URL(url);
      assert.equal(parsed.origin, origin, `${method} ${url} leaves the server's origin`);
      if (parsed.pathname.startsWith("/v2/")) {
        const route = routes.find((r) => r.method === method && r.pattern.test(parsed.pathname));
        assert.ok(route, `${method} ${parsed.pathname} is not a route of docs/openapi.json`);
      } else if (type === "document") {
        assert.equal(method, "GET", `${method} ${url}: a navigation is a GET of the dashboard's page`);
      } else {
        assert.match(
          parsed.pathname,
          /^\/(assets\/[\w.-]+\.(js|css|woff2?|svg|png)|favicon\.(svg|ico))$/,
          `${method} ${url}`,
        );
      }
    }
  }
}

/** Fails on serious or critical accessibility violations of the page as it is now. */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(
    bad.map(
      (v) =>
        `${v.id}: ${v.help} (${v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary ?? ""}`).join(", ")})`,
    ),
    [],
    `accessibility violations on ${name}`,
  );
}

export const SCREENSHOTS = path.join(REPO_ROOT, "test", "web", "screenshots");

/** Checks the page for accessibility and writes its screenshot (git-ignored). */
export async function checkPage(page: Page, name: string): Promise<void> {
  await assertAccessible(page, name);
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
