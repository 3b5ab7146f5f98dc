import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { freePort, httpOk, startServerProcess, type ServerProcess } from "./process.ts";
import { ensureDashboardBuilt, launchChromium, RequestLog } from "./browser.ts";

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

/**
 * Builds the dashboard when needed, starts a server on a fresh SQLite file (with its embedded PDP and OPA ports on
 * free ports when `pdp`) and the server settings `env`, the bootstrap owner account, and logs it in.
 */
export async function startDashboardSession(
  name: string,
  options: { pdp?: boolean; env?: Record<string, string> } = {},
): Promise<DashboardSession> {
  ensureDashboardBuilt();
  const adminKey = `web-test-${randomBytes(16).toString("hex")}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `gatehouse-web-${name}-`));
  const opaPort = options.pdp ? await freePort() : 0;
  const server = await startServerProcess(
    {
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: adminKey,
      GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: OWNER.email,
      GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: OWNER.password,
      GATEHOUSE_OPA_PORT: String(opaPort),
      ...options.env,
    },
    [],
    { pdp: options.pdp ?? false },
  );
  const browser = await launchChromium();
  const page = await (await browser.newContext({ reducedMotion: "reduce" })).newPage();
  page.setDefaultTimeout(15_000);
  const log = new RequestLog();
  log.watch(page);
  await page.goto(`${server.baseUrl}/login`);
  await page.getByLabel("E-mail").fill(OWNER.email);
  await page.locator('input[name="password"]').fill(OWNER.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
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
