/**
 * The screenshots of docs/dashboard.md: starts a real server on a fresh data directory, seeds it as the second
 * pass's browser test does, logs in and writes docs/dashboard/<page>.png (1024 × 640, light mode).
 *
 *   npm run build:web && node --import tsx scripts/dashboard-screenshots.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { startServerProcess, REPO_ROOT } from "../test/helpers/process.ts";
import { ensureDashboardBuilt, launchChromium } from "../test/helpers/browser.ts";
import { seedSecondPass } from "../test/helpers/web-second-pass.ts";
import { OWNER } from "../test/helpers/web-session.ts";

const OUT = path.join(REPO_ROOT, "docs", "dashboard");
const env = (page: string) => `/o/default/p/default/e/production/${page}`;

/** Each page's file name and path; a page with `open` clicks that button first. */
const PAGES: { name: string; url: string; open?: string }[] = [
  { name: "login", url: "/login" },
  { name: "projects", url: "/o/default/projects" },
  { name: "activity", url: "/o/default/activity" },
  { name: "api-log", url: "/o/default/api-log?method=all" },
  { name: "users", url: env("users") },
  { name: "tenants", url: env("tenants") },
  { name: "overview", url: env("overview") },
  { name: "instances", url: env("instances"), open: "Open doc:q3" },
  { name: "playground", url: env("check") },
  { name: "decision-log", url: env("decisions") },
  { name: "resources", url: env("resources") },
  { name: "roles", url: env("roles") },
  { name: "policy-editor", url: env("policy") },
  { name: "abac", url: env("abac") },
  { name: "api-keys", url: "/o/default/settings/api-keys" },
  { name: "members", url: "/o/default/settings/members" },
  { name: "organization", url: "/o/default/settings/organization" },
];

const adminKey = `screenshots-${randomBytes(16).toString("hex")}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-screenshots-"));
ensureDashboardBuilt();
const server = await startServerProcess({
  GATEHOUSE_DATA_DIR: dataDir,
  GATEHOUSE_BOOTSTRAP_API_KEY: adminKey,
  GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: OWNER.email,
  GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: OWNER.password,
  GATEHOUSE_OPA_PORT: "0",
});
const browser = await launchChromium();
try {
  await seedSecondPass(server.baseUrl, adminKey);
  const context = await browser.newContext({
    viewport: { width: 1024, height: 640 },
    colorScheme: "light",
    reducedMotion: "reduce",
  });
  const page = await context.newPage();
  fs.mkdirSync(OUT, { recursive: true });
  await page.goto(`${server.baseUrl}/login`);
  await page.getByRole("button", { name: "Log in" }).waitFor();
  await page.screenshot({ path: path.join(OUT, "login.png") });
  await page.getByLabel("E-mail").fill(OWNER.email);
  await page.locator('input[name="password"]').fill(OWNER.password);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
  for (const { name, url, open } of PAGES.slice(1)) {
    await page.goto(server.baseUrl + url);
    await page.getByRole("heading", { level: 1 }).waitFor();
    await page.waitForLoadState("networkidle");
    if (open) {
      await page.getByRole("button", { name: open }).click();
      await page.waitForLoadState("networkidle");
    }
    await page.getByRole("status").first().waitFor({ state: "detached" });
    await page.screenshot({ path: path.join(OUT, `${name}.png`) });
    console.log(`docs/dashboard/${name}.png`);
  }
} finally {
  await browser.close();
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
