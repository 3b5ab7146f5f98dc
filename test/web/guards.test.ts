import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Dialog, Page } from "playwright-core";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import {
  dependentSteps,
  fillLogin,
  logIn,
  startDashboardSession,
  type DashboardSession,
} from "../helpers/web-session.ts";

// What keeps an operator out of trouble in the dashboard: an ended session goes to the login page and back, unsaved
// policy edits are not dropped without asking, a rate limit below the floor is refused in the form, and a 429
// says when to try again.
const unavailable = browserUnavailable();
const S = "/v2/schema/default/production";
const envPath = (segment: string) => `/o/default/p/default/e/production/${segment}`;

let s: DashboardSession;
let page: Page;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("guards", {
    // Two failed logins of one account, then 429: a real one for the login page.
    env: { GATEHOUSE_LOGIN_FAILURES_PER_ACCOUNT: "2" },
    // Tall enough for the whole side bar of an environment's pages.
    context: { viewport: { width: 1280, height: 1000 } },
    login: false,
  });
  page = s.page;
});

after(async () => {
  await s?.close();
});

const step = dependentSteps(() => page, "guards-failure.png");

const heading = (name: string) => page.getByRole("heading", { name, exact: true });
const nav = () => page.getByRole("navigation", { name: "Pages" });
const pathOf = (p: Page) => {
  const url = new URL(p.url());
  return url.pathname + url.search;
};

/** A fresh session, so that each step stands on its own (a failed one leaves no one logged out for the next). */
const freshLogin = () => logIn(page, s.server.baseUrl);

/** Ends the browser's session on the server (a logout with its cookie), leaving the cookie in the browser. */
async function endSessionServerSide(): Promise<void> {
  const cookie = (await page.context().cookies(s.server.baseUrl))
    .map((c) => `${c.name}=${c.value}`)
    .join("; ");
  const current = await fetch(`${s.server.baseUrl}/v2/auth/session`, { headers: { cookie } });
  assert.equal(current.status, 200);
  const { csrf_token } = (await current.json()) as { csrf_token: string };
  const out = await fetch(`${s.server.baseUrl}/v2/auth/logout`, {
    method: "POST",
    headers: { cookie, "x-csrf-token": csrf_token, origin: s.server.baseUrl },
  });
  assert.equal(out.status, 204);
  const after = await fetch(`${s.server.baseUrl}/v2/auth/session`, { headers: { cookie } });
  assert.equal(after.status, 401);
}

test(
  "the dashboard's guards: ended sessions, unsaved edits, the rate limit's floor, 429",
  { skip: unavailable ?? false, timeout: 300_000 },
  async (t) => {
    await step(t, "seed a resource and a role; log in", async () => {
      await s.api("POST", `${S}/resources`, { key: "doc", name: "Doc", actions: { read: {}, write: {} } });
      await s.api("POST", `${S}/roles`, { key: "viewer", name: "Viewer" });
      await freshLogin();
    });

    await step(t, "an ended session: the next page goes to login, and login comes back to it", async () => {
      await page.goto(s.server.baseUrl + envPath("users"));
      await heading("Users").waitFor();
      await endSessionServerSide();
      await nav().getByRole("link", { name: "Tenants", exact: true }).click();
      await page.getByRole("heading", { name: "Log in to Gatehouse" }).waitFor();
      assert.equal(pathOf(page), `/login?next=${encodeURIComponent(envPath("tenants"))}`);
      await page.getByText("Log in to return to the page you were on").waitFor();
      await checkPage(page, "guards-session-ended-login");
      await fillLogin(page);
      await heading("Tenants").waitFor();
      assert.equal(pathOf(page), envPath("tenants"));
      await page.getByRole("button", { name: "New tenant" }).waitFor();
    });

    await step(t, "an ended session under an open form: the write goes to login and back", async () => {
      await nav().getByRole("link", { name: "Organization", exact: true }).click();
      await heading("Organization").waitFor();
      await endSessionServerSide();
      await page.getByRole("textbox", { name: "Name", exact: true }).fill("Renamed after the end");
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByRole("heading", { name: "Log in to Gatehouse" }).waitFor();
      assert.equal(pathOf(page), `/login?next=${encodeURIComponent("/o/default/settings/organization")}`);
      const org = (await s.api("GET", "/v2/orgs/active/org")).json as { name: string };
      assert.notEqual(org.name, "Renamed after the end");
      await fillLogin(page);
      await heading("Organization").waitFor();
      assert.equal(pathOf(page), "/o/default/settings/organization");
    });

    await step(
      t,
      "unsaved policy edits: another page asks first; stay keeps them, leave drops them",
      async () => {
        await freshLogin();
        await page.goto(s.server.baseUrl + envPath("policy"));
        const cell = page.getByRole("checkbox", { name: "viewer may read doc", exact: true });
        await cell.check();
        await page.getByRole("button", { name: "Save 1 change" }).waitFor();
        await nav().getByRole("link", { name: "Users", exact: true }).click();
        const dialog = page.getByRole("dialog", { name: "Leave without saving?" });
        await dialog.waitFor();
        await checkPage(page, "guards-unsaved-policy");
        await dialog.getByRole("button", { name: "Stay on this page" }).click();
        await dialog.waitFor({ state: "detached" });
        assert.equal(pathOf(page), envPath("policy"));
        assert.equal(await cell.isChecked(), true);
        await page.getByRole("button", { name: "Save 1 change" }).waitFor();

        // Closing or reloading the tab gets the browser's own question; dismissed, the page and its edit stay.
        const asked = new Promise<Dialog>((resolve) => page.once("dialog", resolve));
        await page.close({ runBeforeUnload: true });
        const question = await asked;
        assert.equal(question.type(), "beforeunload");
        await question.dismiss();
        assert.equal(page.isClosed(), false);
        assert.equal(await cell.isChecked(), true);

        await nav().getByRole("link", { name: "Users", exact: true }).click();
        await dialog.getByRole("button", { name: "Leave and discard" }).click();
        await heading("Users").waitFor();
        const viewer = (await s.api("GET", `${S}/roles/viewer`)).json as { permissions: string[] };
        assert.deepEqual(viewer.permissions, []);

        // Without edits nothing asks.
        await page.goto(s.server.baseUrl + envPath("policy"));
        await cell.waitFor();
        await nav().getByRole("link", { name: "Users", exact: true }).click();
        await heading("Users").waitFor();
      },
    );

    await step(t, "an unsaved condition set: the back button asks too", async () => {
      await page.goto(s.server.baseUrl + envPath("users"));
      await heading("Users").waitFor();
      await nav().getByRole("link", { name: "ABAC", exact: true }).click();
      await heading("ABAC").waitFor();
      await page.getByRole("button", { name: "New user set" }).click();
      const modal = page.getByRole("dialog", { name: "New user set" });
      await modal.getByRole("textbox", { name: "Key", exact: true }).fill("seniors");
      await page.goBack();
      const ask = page.getByRole("dialog", { name: "Leave without saving?" });
      await ask.waitFor();
      await ask.getByRole("button", { name: "Stay on this page" }).click();
      await ask.waitFor({ state: "detached" });
      assert.equal(pathOf(page), envPath("abac"));
      assert.equal(await modal.getByRole("textbox", { name: "Key", exact: true }).inputValue(), "seniors");
      await modal.getByRole("button", { name: "Cancel" }).click();
      await modal.waitFor({ state: "detached" });
    });

    await step(
      t,
      "the organization's rate limit: below 60 is refused in the form, the server's 422 shown",
      async () => {
        await freshLogin();
        await nav().getByRole("link", { name: "Organization", exact: true }).click();
        await heading("Organization").waitFor();
        await page.getByText("Members' sessions in this dashboard are limited apart").waitFor();
        const limit = page.getByLabel("Rate limit per minute");
        const save = page.getByRole("button", { name: "Save" });
        const patches = () => s.log.requests.filter((r) => r.method === "PATCH").length;
        const before = patches();
        for (const typed of ["10", "-5"]) {
          await limit.fill(typed);
          await limit.blur();
          await page.getByText("At least 60 per minute").waitFor();
          // Not clamped to a minimum behind the operator's back: the value stays as typed.
          assert.equal(await limit.inputValue(), typed);
          assert.equal(await save.isDisabled(), true);
          await limit.press("Enter");
        }
        await checkPage(page, "guards-rate-limit-floor");
        assert.equal(patches(), before, "nothing was sent");
        const org = (await s.api("GET", "/v2/orgs/active/org")).json as { settings: Record<string, unknown> };
        assert.equal(org.settings["rate_limit_per_minute"], undefined);

        // What the form lets through and the server refuses shows the server's 422.
        await limit.fill("");
        await limit.fill("2000000000");
        assert.equal(await limit.inputValue(), "2000000000");
        await save.click();
        const refused = page.getByRole("alert").filter({ hasText: "(422)" });
        await refused.waitFor();
        assert.match(await refused.innerText(), /rate_limit_per_minute/);

        await limit.fill("120");
        await save.click();
        await page.getByText("Organization saved").waitFor();
        const saved = (await s.api("GET", "/v2/orgs/active/org")).json as {
          settings: Record<string, unknown>;
        };
        assert.equal(saved.settings["rate_limit_per_minute"], 120);
      },
    );

    await step(t, "a 429 in the frame says when to try again, and then can", async () => {
      // The limits of sessions are the server's; here the page's answer to a 429 as the server sends it.
      let refuse = true;
      await page.route("**/v2/orgs/*", async (route) => {
        if (!refuse || route.request().method() !== "GET") return route.fallback();
        await route.fulfill({
          status: 429,
          headers: { "retry-after": "3", "content-type": "application/json" },
          body: JSON.stringify({
            error_code: "TOO_MANY_REQUESTS",
            title: "Rate limit exceeded",
            message:
              "this API key is over its limit of 60 requests per minute; retry the same request in 3 s",
          }),
        });
      });
      await nav().getByRole("link", { name: "API keys", exact: true }).click();
      await heading("API keys").waitFor();
      await nav().getByRole("link", { name: "Organization", exact: true }).click();
      const alert = page.getByRole("alert").filter({ hasText: "Too many requests (429)" });
      await alert.waitFor();
      assert.match(await alert.innerText(), /Try again in [1-3] s/);
      const retry = alert.getByRole("button", { name: "Try again" });
      assert.equal(await retry.isDisabled(), true);
      await checkPage(page, "guards-429-in-frame");
      await alert.getByText("Try again now.").waitFor({ timeout: 6_000 });
      refuse = false;
      await retry.click();
      await page.getByLabel("Rate limit per minute").waitFor();
      assert.equal(await page.getByLabel("Rate limit per minute").inputValue(), "120");
      await page.unroute("**/v2/orgs/*");
    });

    await step(t, "a real 429 on the login page says when to try again", async () => {
      const other = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
      other.setDefaultTimeout(15_000);
      s.log.watch(other);
      await other.goto(`${s.server.baseUrl}/login`);
      for (let attempt = 1; attempt <= 3; attempt++) {
        await other.getByRole("textbox", { name: "E-mail" }).fill("nobody@example.com");
        await other.locator('input[name="password"]').fill("not the password at all");
        await other.getByRole("button", { name: "Log in" }).click();
        await other.getByRole("alert").waitFor();
        if (attempt < 3) await other.getByRole("alert").filter({ hasText: "(401)" }).waitFor();
      }
      const alert = other.getByRole("alert").filter({ hasText: "Too many requests (429)" });
      await alert.waitFor();
      assert.match(await alert.innerText(), /too many failed logins/);
      assert.match(await alert.innerText(), /Try again in \d+ (s|min)\./);
      // A wrong password is a 401 too, and stays on the login page.
      assert.equal(pathOf(other), "/login");
      await checkPage(other, "guards-429-login");
      await other.context().close();
    });

    await step(t, "every request was a route of docs/openapi.json", async () => {
      s.log.assertPublicApiOnly(s.server.baseUrl);
    });
  },
);
