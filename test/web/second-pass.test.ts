import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { assertAccessible, browserUnavailable, checkPage } from "../helpers/browser.ts";
import { seedSecondPass, READER, type Seeded } from "../helpers/web-second-pass.ts";
import {
  dependentSteps,
  logIn,
  OWNER,
  startDashboardSession,
  type DashboardSession,
} from "../helpers/web-session.ts";

// Issue 38's second pass, items 5 and 6 and its finish: the activity as sentences, the raw log's defaults, keys
// and invites, a read member's view, forms checked as typed, counts, paging and search in the URL, instance roles
// in lists, 390 px, dark mode, tab titles, not-found places; axe in light and dark mode and at 390 px.
const unavailable = browserUnavailable();
const F = "/v2/facts/default/production";
const envPage = (segment: string) => `/o/default/p/default/e/production/${segment}`;

let s: DashboardSession;
let page: Page;
let seeded: Seeded;
// The sentences put each value in U+2068 … U+2069 (the plain-text <bdi>): compared without them.
const ADMINS_ONLY = "You need admin access to the organization: only its admins see and manage it.";
const plain = (text: string) => text.replace(/[\u2068\u2069]/g, "");

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("second", {
    context: { viewport: { width: 1280, height: 1000 }, colorScheme: "light" },
    login: false,
  });
  seeded = await seedSecondPass(s.server.baseUrl, s.adminKey);
  page = s.page;
});

after(async () => {
  await s?.close();
});

const step = dependentSteps(() => page, "second-pass-failure.png");

const heading = (name: string, p = page) => p.getByRole("heading", { name, exact: true });
const nav = (p = page) => p.getByRole("navigation", { name: "Pages" });
const query = (p = page) => new URL(p.url()).searchParams;

/** The rows of the page's (first) table as their cells' text. */
async function rows(p = page, label?: string): Promise<string[][]> {
  const table = label ? p.getByRole("table", { name: label }) : p.getByRole("table").first();
  await table.waitFor();
  return table
    .locator("tbody tr")
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")));
}

test(
  "the dashboard's second pass: activity, keys and members, forms, lists, small screens, dark mode",
  { skip: unavailable ?? false, timeout: 600_000 },
  async (t) => {
    await step(t, "log in; every page sets the tab's title", async () => {
      await logIn(page, s.server.baseUrl);
      assert.equal(await page.title(), "Projects · Gatehouse");
      await page.goto(s.server.baseUrl + envPage("users"));
      await heading("Users").waitFor();
      for (const label of ["Tenants", "Instances", "Activity", "API log", "API keys", "Members"]) {
        await nav().getByRole("link", { name: label, exact: true }).click();
        await page.waitForFunction((title) => document.title === title, `${label} · Gatehouse`);
      }
    });

    await step(t, "activity: writes as sentences, filtered by actor and by object, in the URL", async () => {
      await nav().getByRole("link", { name: "Activity", exact: true }).click();
      await heading("Activity").waitFor();
      const said = () => rows(page, "Activity").then((r) => r.map((cells) => plain(cells[1] ?? "")));
      const all = await said();
      for (const sentence of [
        `${OWNER.email} assigned viewer to bob in acme (default / production)`,
        "key ci-deploy deleted resource invoice (default / production)",
        "key seeder created user bob (other / staging)",
      ]) {
        assert.ok(all.includes(sentence), `${sentence} in ${all.join("\n")}`);
      }
      // No read, no refused write.
      const viaApi = (
        await s.api("GET", "/v2/history?method=POST&method=PUT&method=PATCH&method=DELETE&success=true")
      ).json as { total_count: number };
      await page.getByText(viaApi.total_count === 1 ? "1 write" : `${viaApi.total_count} writes`).waitFor();
      await checkPage(page, "second-activity");

      const filters = page.getByRole("form", { name: "Filters" });
      await filters.getByLabel("Actor").fill("ci-deploy");
      await filters.getByRole("button", { name: "Apply" }).click();
      await page.waitForURL(/actor=ci-deploy/);
      await page.getByText("1 write", { exact: true }).waitFor();
      assert.deepEqual(await said(), ["key ci-deploy deleted resource invoice (default / production)"]);

      await filters.getByLabel("Actor").fill("");
      await filters.getByLabel("Object").fill("bob");
      await filters.getByRole("button", { name: "Apply" }).click();
      await page.waitForURL(/object=bob/);
      // bob's creation in both projects and its two assignments: in the path or in the body.
      const aboutBob = (
        await s.api(
          "GET",
          `/v2/history?text=bob&success=true${["POST", "PUT", "PATCH", "DELETE"].map((m) => `&method=${m}`).join("")}`,
        )
      ).json as { total_count: number };
      assert.equal(aboutBob.total_count, 4);
      await page.getByText("4 writes", { exact: true }).waitFor();
      assert.deepEqual(
        (await said()).sort(),
        [
          `${OWNER.email} assigned viewer to bob in acme (default / production)`,
          "key seeder assigned owner to bob on doc:q3 (default / production)",
          "key seeder created user bob (default / production)",
          "key seeder created user bob (other / staging)",
        ].sort(),
      );
      assert.equal(query().get("actor"), null);
    });

    await step(
      t,
      "the API log shows writes unless asked, and can leave the dashboard's own calls out",
      async () => {
        await nav().getByRole("link", { name: "API log", exact: true }).click();
        await heading("API log").waitFor();
        const filters = page.getByRole("form", { name: "Filters" });
        assert.equal(
          await filters.getByLabel("Method", { exact: true }).inputValue(),
          "Writes (POST, PUT, PATCH, DELETE)",
        );
        const methods = async () => (await rows(page)).map((cells) => cells[2]);
        assert.ok((await methods()).length > 0);
        assert.ok(
          (await methods()).every((m) => m !== "GET"),
          "no read by default",
        );

        await filters.getByLabel("Caller").click();
        await page.getByRole("option", { name: "API keys (no dashboard calls)" }).click();
        await filters.getByRole("button", { name: "Apply" }).click();
        await page.waitForURL(/caller=api_key/);
        await page.getByRole("cell", { name: OWNER.email }).first().waitFor({ state: "detached" });
        const actors = (await rows(page)).map((cells) => cells[4]);
        assert.ok(actors.length > 0 && !actors.includes(OWNER.email), actors.join(", "));

        await filters.getByLabel("Method", { exact: true }).click();
        await page.getByRole("option", { name: "All methods" }).click();
        await filters.getByRole("button", { name: "Apply" }).click();
        await page.waitForURL(/method=all/);
        await page.getByRole("cell", { name: "GET", exact: true }).first().waitFor();
      },
    );

    await step(t, "API keys show who created them and when they were last used", async () => {
      await nav().getByRole("link", { name: "API keys", exact: true }).click();
      await heading("API keys").waitFor();
      // A key's use is written at most once a minute, off the request: poll the API, then the page.
      let key: { last_used_at?: string; created_by_key?: { name?: string } } | undefined;
      for (let i = 0; i < 40 && !key?.last_used_at; i++) {
        const keys = (await s.api("GET", "/v2/api-key?per_page=100")).json as {
          data: { id: string; last_used_at?: string; created_by_key?: { name?: string } }[];
        };
        key = keys.data.find((k) => k.id === seeded.ciKeyId);
        if (!key?.last_used_at) await new Promise((r) => setTimeout(r, 500));
      }
      assert.ok(key?.last_used_at, "the key's use is recorded");
      await page.reload();
      const row = page.getByRole("row").filter({ hasText: "ci-deploy" });
      await row.waitFor();
      const cells = await row.locator("td").allTextContents();
      assert.equal(key.created_by_key?.name, "seeder");
      assert.equal(cells[3], "key seeder");
      assert.equal(cells[4], new Date(key.last_used_at).toLocaleString("en-US"));
    });

    await step(t, "an invite defaults to read and says when its link expires, as a date", async () => {
      await nav().getByRole("link", { name: "Members", exact: true }).click();
      await heading("Members").waitFor();
      await page.getByRole("button", { name: "Invite member" }).click();
      const dialog = page.getByRole("dialog", { name: "Invite a member" });
      assert.equal(await dialog.getByLabel("Access", { exact: true }).inputValue(), "read");
      await dialog.getByLabel("E-mail").fill("carol@example.com");
      await dialog.getByRole("button", { name: "Invite" }).click();
      const linkDialog = page.getByRole("dialog", { name: "Invite link for carol@example.com" });
      await linkDialog.getByText(/until [A-Z][a-z]{2} \d{1,2}, \d{4}/).waitFor();
      await linkDialog.getByRole("button", { name: "Close", exact: true }).click();
      const org = (await s.api("GET", "/v2/orgs/active/org")).json as { id: string };
      const invites = (await s.api("GET", `/v2/orgs/${org.id}/invites`)).json as {
        email: string;
        role: string;
        expires_at: string;
      }[];
      const carol = invites.find((i) => i.email === "carol@example.com");
      assert.equal(carol?.role, "read");
      const row = page.getByRole("row").filter({ hasText: "carol@example.com" });
      assert.match((await row.locator("td").nth(3).textContent()) ?? "", /\d{4}/);
      assert.ok(Date.parse(carol.expires_at) > Date.now() + 6 * 86_400_000);
    });

    await step(t, "a read member sees no page or control that can only refuse", async () => {
      const context = await s.browser.newContext({
        reducedMotion: "reduce",
        viewport: { width: 1280, height: 1000 },
      });
      const reader = await context.newPage();
      s.log.watch(reader);
      await logIn(reader, s.server.baseUrl, READER);
      await reader.goto(s.server.baseUrl + envPage("users"));
      await heading("Users", reader).waitFor();
      await nav(reader).getByRole("link", { name: "Members", exact: true }).waitFor();
      assert.equal(await nav(reader).getByRole("link", { name: "API keys" }).count(), 0);
      assert.equal(await nav(reader).getByRole("link", { name: "Webhooks" }).count(), 0);
      assert.equal(await reader.getByRole("button", { name: "New user" }).count(), 0);
      await reader.goto(`${s.server.baseUrl}/o/default/settings/api-keys`);
      await reader.getByText(ADMINS_ONLY).waitFor();
      await reader.goto(`${s.server.baseUrl}/o/default/settings/webhooks`);
      await reader.getByText(ADMINS_ONLY).waitFor();
      await nav(reader).getByRole("link", { name: "Members", exact: true }).click();
      await heading("Members", reader).waitFor();
      assert.equal(await reader.getByRole("button", { name: "Invite member" }).count(), 0);
      assert.equal(await reader.getByRole("heading", { name: "Invites" }).count(), 0);
      await context.close();
    });

    await step(
      t,
      "forms: the key is proposed from the name and checked as typed; a 422 lands on its field",
      async () => {
        await page.goto(s.server.baseUrl + envPage("tenants"));
        await page.getByRole("button", { name: "New tenant" }).click();
        const dialog = page.getByRole("dialog", { name: "New tenant" });
        await dialog.locator('input[name="name"]').fill("Initech Ltd.");
        const key = dialog.locator('input[name="key"]');
        assert.equal(await key.inputValue(), "initech-ltd");
        await dialog.getByText("letters, digits, - and _; proposed from the name").waitFor();
        await key.fill("initech ltd");
        await dialog.getByText("only letters, digits, - and _").waitFor();
        assert.equal(await key.getAttribute("aria-invalid"), "true");
        // Sent anyway: the API's own 422 lands on the key.
        await dialog.getByRole("button", { name: "Create" }).click();
        const refused = await fetch(`${s.server.baseUrl}${F}/tenants`, {
          method: "POST",
          headers: { authorization: `Bearer ${s.adminKey}`, "content-type": "application/json" },
          body: JSON.stringify({ key: "initech ltd", name: "Initech Ltd." }),
        });
        assert.equal(refused.status, 422);
        const { detail } = (await refused.json()) as { detail: { loc: string[]; msg: string }[] };
        const message = detail.find((d) => d.loc.join(".") === "body.key")?.msg ?? "";
        assert.ok(message);
        const keyError = dialog.locator(`[id="${await key.getAttribute("id")}-error"]`);
        await keyError.filter({ hasText: message }).waitFor();
        await key.fill("initech");
        await keyError.waitFor({ state: "detached" });
        await dialog.getByRole("button", { name: "Create" }).click();
        await dialog.waitFor({ state: "detached" });
        const tenant = (await s.api("GET", `${F}/tenants/initech`)).json as { name: string };
        assert.equal(tenant.name, "Initech Ltd.");
      },
    );

    await step(
      t,
      "counts in words; an out-of-range page goes to the last; the search is always in the URL",
      async () => {
        await page.goto(`${s.server.baseUrl}${envPage("users")}?page=999`);
        await page.waitForURL(/page=51\b/);
        await page.getByText("1,003 users", { exact: true }).waitFor();
        await page.getByRole("button", { name: "Page 51" }).waitFor();
        assert.equal((await rows(page)).length, 3);

        await page.goto(`${s.server.baseUrl}${envPage("users")}?page=5`);
        await page.getByText("1,003 users", { exact: true }).waitFor();
        const search = page.getByLabel("Search users");
        await search.fill("user-000");
        await page.waitForURL((url) => url.searchParams.get("q") === "user-000");
        assert.equal(query().get("page"), null);
        await search.fill("bob");
        await page.waitForURL((url) => url.searchParams.get("q") === "bob");
        await page.getByText("1 user", { exact: true }).waitFor();
        await search.fill("");
        await page.waitForURL((url) => !url.searchParams.has("q"));
      },
    );

    await step(t, "users and a tenant's users show instance roles too", async () => {
      await page.goto(`${s.server.baseUrl}${envPage("users")}?q=bob`);
      await page.getByText("1 user", { exact: true }).waitFor();
      const bob = await rows(page);
      assert.equal(bob[0]?.[3], "viewer @ acme, owner on doc:q3");
      await page.goto(s.server.baseUrl + envPage("tenants"));
      await page.getByRole("button", { name: "Users of acme" }).click();
      const users = await rows(page, "Users of acme");
      assert.deepEqual(users, [["bob", "bob@example.com", "viewer, owner on doc:q3"]]);
      const viaApi = (await s.api("GET", `${F}/users/bob`)).json as {
        roles: { role: string; tenant: string }[];
      };
      assert.deepEqual(viaApi.roles, [{ role: "viewer", tenant: "acme" }]);
      await page.keyboard.press("Escape");
    });

    await step(t, "a deep link to an unknown project or environment shows a not-found page", async () => {
      for (const url of ["/o/default/p/nope/e/production/users", "/o/default/p/default/e/nope/users"]) {
        await page.goto(s.server.baseUrl + url);
        await page.getByRole("alert").filter({ hasText: "Not found (404)" }).waitFor();
        assert.equal(await page.getByRole("button", { name: "New user" }).count(), 0);
        assert.equal(await heading("Users").count(), 0);
        assert.equal(await page.title(), "Not found · Gatehouse");
      }
    });

    const MAIN = ["projects", "activity", "api-log", "settings/members", "settings/api-keys"];
    const ENV_MAIN = ["users", "tenants", "instances", "overview"];
    const visitMain = async (p: Page, name: string) => {
      for (const path of [...MAIN.map((m) => `/o/default/${m}`), ...ENV_MAIN.map(envPage)]) {
        await p.goto(s.server.baseUrl + path);
        await p.getByRole("heading", { level: 1 }).waitFor();
        await p.getByRole("status").first().waitFor({ state: "detached" });
        await assertAccessible(p, `${path} (${name})`);
      }
    };

    await step(t, "dark mode: the toggle, every main page passes axe, the graph is dark", async () => {
      await page.goto(s.server.baseUrl + envPage("instances"));
      await page.getByRole("button", { name: "Switch to dark mode" }).click();
      assert.equal(await page.locator("html").getAttribute("data-mantine-color-scheme"), "dark");
      await page.getByRole("button", { name: "Open doc:q3" }).click();
      const graph = page.locator(".react-flow");
      await graph.waitFor();
      assert.match((await graph.getAttribute("class")) ?? "", /\bdark\b/);
      const nodeBackgrounds = await page
        .locator(".react-flow__node")
        .evaluateAll((nodes) => nodes.map((n) => getComputedStyle(n).backgroundColor));
      assert.ok(nodeBackgrounds.length > 0);
      assert.ok(
        nodeBackgrounds.every((c) => c !== "rgb(255, 255, 255)"),
        nodeBackgrounds.join(", "),
      );
      const controls = await page
        .locator(".react-flow__controls-button")
        .first()
        .evaluate((b) => getComputedStyle(b).backgroundColor);
      assert.notEqual(controls, "rgb(255, 255, 255)");
      await checkPage(page, "second-dark-graph");
      await visitMain(page, "dark");
      // The choice stays after a reload.
      await page.reload();
      assert.equal(await page.locator("html").getAttribute("data-mantine-color-scheme"), "dark");
      await page.getByRole("button", { name: "Switch to light mode" }).click();
      assert.equal(await page.locator("html").getAttribute("data-mantine-color-scheme"), "light");
      await visitMain(page, "light");
    });

    await step(
      t,
      "at 390 px: the switchers are in the menu, wide tables scroll in their box, axe passes",
      async () => {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(s.server.baseUrl + envPage("users"));
        await heading("Users").waitFor();
        // Not in the top bar: in the menu.
        assert.equal(await page.getByRole("banner").getByLabel("Project", { exact: true }).count(), 0);
        await page.getByRole("button", { name: "Menu" }).click();
        const menu = nav();
        for (const label of ["Organization", "Project", "Environment"]) {
          await menu.getByLabel(label, { exact: true }).waitFor();
        }
        await menu.getByLabel("Project", { exact: true }).click();
        await page.getByRole("option", { name: "Other" }).click();
        await page.waitForURL(/\/p\/other\/e\/[\w-]+\//);
        // The menu closes on the way to the page.
        await page.waitForFunction(
          () => (document.querySelector('nav[aria-label="Pages"]')?.getBoundingClientRect().right ?? 1) <= 0,
        );
        await page.goto(s.server.baseUrl + envPage("users"));
        await heading("Users").waitFor();
        await page.locator(".table-scroll table").first().waitFor();
        const widths = await page.evaluate(() => ({
          page: document.documentElement.scrollWidth,
          window: window.innerWidth,
          box: document.querySelector(".table-scroll")?.scrollWidth ?? 0,
          boxShown: document.querySelector(".table-scroll")?.clientWidth ?? 0,
        }));
        assert.ok(widths.page <= widths.window, `the page is ${widths.page} px wide at ${widths.window}`);
        assert.ok(widths.box > widths.boxShown, `the table scrolls in its box: ${JSON.stringify(widths)}`);
        await checkPage(page, "second-390-users");
        await visitMain(page, "390 px");
        await page.setViewportSize({ width: 1280, height: 1000 });
      },
    );

    await step(
      t,
      "the activity's first load stays under the 400 KB budget of compressed JavaScript",
      async () => {
        const fresh = await s.browser.newContext({ storageState: await page.context().storageState() });
        const visit = await fresh.newPage();
        s.log.watch(visit);
        const sizes: Promise<number>[] = [];
        visit.on("requestfinished", (request) => {
          if (request.resourceType() === "script")
            sizes.push(request.sizes().then((s) => s.responseBodySize));
        });
        await visit.goto(`${s.server.baseUrl}/o/default/activity`);
        await heading("Activity", visit).waitFor();
        await visit.waitForLoadState("networkidle");
        const total = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
        assert.ok(total > 0 && total < 400 * 1024, `the activity's first load: ${total} B of JS`);
        await fresh.close();
      },
    );

    await step(t, "every request the pages made is a route of docs/openapi.json or a dashboard file", () => {
      s.log.assertPublicApiOnly(s.server.baseUrl);
    });
  },
);
