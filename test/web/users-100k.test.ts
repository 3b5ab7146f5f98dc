import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import type { Page } from "playwright-core";
import { httpOk, startServerProcess } from "../helpers/process.ts";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import { logIn, startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// The users page of an environment with 100,000 users: its first page and a search each ask the server for one
// page of 20, whatever the environment holds.
const unavailable = browserUnavailable();
const USERS = 100_000;

let s: DashboardSession;
let page: Page;

/** Writes the users straight into the SQLite file, in one transaction, while no server runs. */
function seedUsers(
  dataDir: string,
  scope: { organizationId: string; projectId: string; environmentId: string },
) {
  const db = new Database(path.join(dataDir, "gatehouse.db"));
  const insert = db.prepare(
    `INSERT INTO users (id, organization_id, project_id, environment_id, created_at, updated_at, key, email,
       first_name, last_name, attributes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const start = Date.parse("2026-01-01T00:00:00Z");
  db.transaction(() => {
    for (let i = 0; i < USERS; i++) {
      const at = new Date(start + i * 1000).toISOString().replace("Z", "+00:00");
      const key = `user-${String(i).padStart(6, "0")}`;
      insert.run(
        randomUUID(),
        scope.organizationId,
        scope.projectId,
        scope.environmentId,
        at,
        at,
        key,
        `${key}@example.com`,
        "User",
        String(i),
        "{}",
      );
    }
  })();
  db.close();
}

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("100k", {
    login: false,
    async prepare({ dataDir, adminKey, env }) {
      // The first start creates the organization, its default project and environments, and the owner.
      const first = await startServerProcess(env);
      const production = (
        await httpOk(first.baseUrl, adminKey, "GET", "/v2/projects/default/envs/production")
      ).json as { id: string; project_id: string; organization_id: string };
      await first.stop();
      seedUsers(dataDir, {
        organizationId: production.organization_id,
        projectId: production.project_id,
        environmentId: production.id,
      });
    },
  });
  page = s.page;
});

after(async () => {
  await s?.close();
});

/** The users requests made since `from`, and the number of users each answer carried. */
async function usersCalls(from: number, answers: Map<string, number>) {
  await page.waitForLoadState("networkidle");
  return s.log.requests
    .slice(from)
    .filter((r) => new URL(r.url).pathname === "/v2/facts/default/production/users")
    .map((r) => ({ params: new URL(r.url).searchParams, size: answers.get(r.url) }));
}

test(
  "with 100,000 users the users page loads one page of 20 for its first page and for a search",
  { skip: unavailable ?? false, timeout: 300_000 },
  async () => {
    const answers = new Map<string, number>();
    page.on("response", (response) => {
      if (!response.url().includes("/users?")) return;
      void response
        .json()
        .then((body: { data: unknown[] }) => answers.set(response.url(), body.data.length))
        .catch(() => {});
    });
    await logIn(page, s.server.baseUrl);

    const before = s.log.requests.length;
    await page.goto(`${s.server.baseUrl}/o/default/p/default/e/production/users`);
    await page.getByText(`${USERS.toLocaleString("en-US")} users`).waitFor();
    await page.getByRole("cell", { name: "user-000000", exact: true }).waitFor();
    assert.equal(await page.locator("tbody tr").count(), 20);
    const first = await usersCalls(before, answers);
    assert.equal(first.length, 1, "one request for the first page");
    assert.equal(first[0]!.params.get("per_page"), "20");
    assert.equal(first[0]!.params.get("page"), "1");
    assert.equal(first[0]!.size, 20);
    await checkPage(page, "users-100k");

    const beforeSearch = s.log.requests.length;
    await page.getByLabel("Search users").fill("user-054321");
    await page.getByRole("cell", { name: "user-054321@example.com" }).waitFor();
    await page.getByText("1 user", { exact: true }).waitFor();
    const searches = await usersCalls(beforeSearch, answers);
    // Typing is debounced: the search is one request (at most one more for a pause mid-typing), each one page.
    assert.ok(searches.length >= 1 && searches.length <= 2, `${searches.length} search requests`);
    for (const { params, size } of searches) {
      assert.equal(params.get("per_page"), "20");
      assert.ok(size !== undefined && size <= 20);
    }
    assert.equal(searches.at(-1)!.params.get("search"), "user-054321");
    await checkPage(page, "users-100k-search");

    const total = (await s.api("GET", "/v2/facts/default/production/users?per_page=1")).json as {
      total_count: number;
    };
    assert.equal(total.total_count, USERS);
    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
