import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { freePort, httpOk, startServerProcess, type ServerProcess } from "./process.ts";
import { ensureDashboardBuilt, launchChromium, RequestLog, SCREENSHOTS } from "./browser.ts";

export const OWNER = { email: "owner@example.com", password: "correct horse battery staple" };

/** A started `gatehouse serve` with its owner logged in to a Chromium page that records its requests. */
export interface DashboardSession {
  server: ServerProcess & { pdpPort: number };
  opaPort: number;
  adminKey: string;
  browser: Browser;
  page: Page;
  log: RequestLog;
  /** One JSON request with the organization's admin key; asserts a 2xx answer. */
  api(method: string, url: string, body?: unknown): ReturnType<typeof httpOk>;
  close(): Promise<void>;
}

export interface DashboardSessionOptions {
  /** An embedded PDP, and its OPA port, on free ports. */
  pdp?: boolean;
  /** More server settings. */
  env?: Record<string, string>;
  /** The API's port, when it must be known before the start (a provider's callback); a free one otherwise. */
  port?: number;
  /** The page's browser context options besides reduced motion (a viewport, a colour scheme). */
  context?: BrowserContextOptions;
  /** Whether the first start creates the owner account (default true); without it, it prints a setup link. */
  owner?: boolean;
  /** Whether the page logs the owner in (default: when there is an owner); else it is left blank. */
  login?: boolean;
  /** Runs before the start on its data directory, with the admin key and the settings it will be started with. */
  prepare?(before: { dataDir: string; adminKey: string; env: Record<string, string> }): Promise<void>;
}

/**
 * Builds the dashboard when needed, starts a server on a fresh SQLite file (with its embedded PDP and OPA ports on
 * free ports when `pdp`) and the server settings `env`, the bootstrap owner account, and logs it in.
 */
export async function startDashboardSession(
  name: string,
  options: DashboardSessionOptions = {},
): Promise<DashboardSession> {
  ensureDashboardBuilt();
  const owner = options.owner ?? true;
  const adminKey = `web-test-${randomBytes(16).toString("hex")}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `gatehouse-web-${name}-`));
  const opaPort = options.pdp ? await freePort() : 0;
  const env = {
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_BOOTSTRAP_API_KEY: adminKey,
    ...(owner && {
      GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: OWNER.email,
      GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: OWNER.password,
    }),
    GATEHOUSE_OPA_PORT: String(opaPort),
    ...options.env,
  };
  await options.prepare?.({ dataDir, adminKey, env });
  const server = await startServerProcess(env, [], { pdp: options.pdp ?? false, port: options.port });
  const browser = await launchChromium();
  // Without animations, a page is checked as it will stay, not halfway through a transition.
  const page = await (await browser.newContext({ reducedMotion: "reduce", ...options.context })).newPage();
  page.setDefaultTimeout(15_000);
  const log = new RequestLog();
  log.watch(page);
  if (options.login ?? owner) await logIn(page, server.baseUrl);
  return {
    server,
    opaPort,
    adminKey,
    browser,
    page,
    log,
    api: (method, url, body) => httpOk(server.baseUrl, adminKey, method, url, body),
    async close() {
      await browser.close();
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Fills in and sends the login form the page shows. */
export async function fillLogin(page: Page, who = OWNER): Promise<void> {
  await page.getByLabel("E-mail").fill(who.email);
  await page.locator('input[name="password"]').fill(who.password);
  await page.getByRole("button", { name: "Log in" }).click();
}

/** Logs `who` in on the login page and waits for the projects page. */
export async function logIn(page: Page, baseUrl: string, who = OWNER): Promise<void> {
  await page.goto(`${baseUrl}/login`);
  await fillLogin(page, who);
  await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
}

/** The one-time setup link a first start without an owner account printed. */
export function setupLink(server: ServerProcess): string {
  const link = /(http:\/\/\S+\/setup\/\S+)/.exec(server.output())?.[1];
  assert.ok(link, `no setup link in the output:\n${server.output()}`);
  return link;
}

/**
 * Steps of one test that depend on each other: after a failure the rest are skipped rather than timing out, and
 * the page as it was is saved as `screenshot` in the screenshots folder.
 */
export function dependentSteps(page: () => Page | undefined, screenshot: string) {
  let failed = false;
  return (t: TestContext, name: string, fn: (st: TestContext) => Promise<void> | void) =>
    t.test(name, { skip: failed && "an earlier step failed" }, async (st) => {
      try {
        await fn(st);
      } catch (error) {
        failed = true;
        await page()
          ?.screenshot({ path: path.join(SCREENSHOTS, screenshot), fullPage: true })
          .catch(() => {});
        throw error;
      }
    });
}
