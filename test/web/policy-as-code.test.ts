import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import { dependentSteps, startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// The Policy as code page: the exported file, an edit planned (exactly that change), replayed against the
// decisions /allowed logged (the flips are those /allowed gives after the apply), applied (the role lost it).
const unavailable = browserUnavailable();
let s: DashboardSession;
const FACTS = "/v2/facts/default/production";
const SCHEMA = "/v2/schema/default/production";
const CHECKS = [
  { user: "ann", action: "read" },
  { user: "ann", action: "write" },
  { user: "bob", action: "read" },
  { user: "bob", action: "write" },
  { user: "bob", action: "write" },
].map((c) => ({ ...c, resource: { type: "document", key: "d1", tenant: "acme" } }));
const allowed = async (check: (typeof CHECKS)[number]) =>
  (await s.api("POST", "/v2/pdps/default/production/allowed", check)).json.allow as boolean;

let before_: boolean[] = [];
before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("policy-as-code", { pdp: true });
  await s.api("POST", `${SCHEMA}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {}, write: {} },
  });
  await s.api("POST", `${SCHEMA}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
  await s.api("POST", `${SCHEMA}/roles`, {
    key: "editor",
    name: "Editor",
    permissions: ["document:read", "document:write"],
  });
  await s.api("POST", `${FACTS}/tenants`, { key: "acme", name: "Acme" });
  for (const key of ["ann", "bob"]) await s.api("POST", `${FACTS}/users`, { key });
  await s.api("POST", `${FACTS}/role_assignments`, { user: "ann", role: "viewer", tenant: "acme" });
  await s.api("POST", `${FACTS}/role_assignments`, { user: "bob", role: "editor", tenant: "acme" });
  await s.api("POST", `${FACTS}/resource_instances`, { resource: "document", key: "d1", tenant: "acme" });
  before_ = [];
  for (const check of CHECKS) before_.push(await allowed(check));
  assert.deepEqual(before_, [true, false, true, true, true]);
  // The log is written within a moment: wait until a replay sees every check.
  const { policy } = (await s.api("GET", `${SCHEMA}/policy`)).json as { policy: string };
  for (let tries = 0; ; tries++) {
    const r = (await s.api("POST", `${SCHEMA}/policy/replay`, { draft: { policy } })).json as {
      replayed: number;
    };
    if (r.replayed >= CHECKS.length) break;
    assert.ok(tries < 50, `the decision log holds ${r.replayed} of ${CHECKS.length} decisions`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

after(async () => {
  await s?.close();
});

const step = dependentSteps(() => s.page, "failure-policy-as-code.png");

test(
  "policy as code: export, plan, replay, apply",
  { skip: unavailable ?? false, timeout: 240_000 },
  async (t) => {
    const { page } = s;
    const editor = () => page.getByLabel("Policy (YAML)");
    let edited = "";

    await step(t, "the page shows the exported file; a broken file's error is a sentence", async () => {
      await page.goto(`${s.server.baseUrl}/o/default/p/default/e/production/policy-as-code`);
      await page.getByRole("link", { name: "Policy as code", exact: true }).click();
      await page.getByRole("heading", { name: "Policy as code" }).waitFor();
      const exported = (await s.api("GET", `${SCHEMA}/policy`)).json as { policy: string };
      await page.waitForFunction(() => (document.querySelector("textarea")?.value ?? "").length > 0);
      assert.equal(await editor().inputValue(), exported.policy);
      // The editor role's write permission is the one `- document:write` of the file.
      assert.equal(exported.policy.split("      - document:write\n").length, 2);
      edited = exported.policy.replace("      - document:write\n", "");
      assert.notEqual(edited, exported.policy);

      await editor().fill(
        exported.policy.replace("    name: Document\n", "    name: Document\n    colour: red\n"),
      );
      await page.getByRole("button", { name: "Plan", exact: true }).click();
      const alert = page.getByRole("alert");
      await alert.filter({ hasText: /line \d+, column \d+/ }).waitFor();
      assert.match((await alert.textContent()) ?? "", /^[^a-z].*\.$/s);
      await checkPage(page, "policy-as-code-error");
    });

    await step(t, "Plan shows exactly the permission removed", async () => {
      await editor().fill(edited);
      await page.getByRole("button", { name: "Plan", exact: true }).click();
      const changes = page.getByRole("table", { name: "Changes" });
      await changes.waitFor();
      const rows = await changes.locator("tbody tr").allTextContents();
      assert.deepEqual(rows, ["Changeroleeditorpermissions"]);
      const apiPlan = (await s.api("POST", `${SCHEMA}/policy/plan`, { policy: edited })).json as {
        changes: unknown[];
      };
      assert.deepEqual(apiPlan.changes, [
        { op: "update", object: "role", key: "editor", fields: ["permissions"] },
      ]);
      await page.getByLabel("Plan summary").filter({ hasText: "0 created, 1 changed, 0 deleted" }).waitFor();
      await checkPage(page, "policy-as-code-plan");
    });

    let flipsShown: string[] = [];
    await step(t, "Replay shows the counts and the flips with both reasons", async () => {
      await page.getByRole("button", { name: "Replay the last 24 hours against this change" }).click();
      const flips = page.getByRole("table", { name: "Flips" });
      await flips.waitFor();
      flipsShown = await flips.locator("tbody tr").allTextContents();
      assert.equal(flipsShown.length, 2);
      for (const row of flipsShown) {
        assert.match(row, /^.*bobwritedocument:d1Allowed.*editor.*Denied.+$/);
      }
      const summary = (await page.getByLabel("Replay summary").textContent()) ?? "";
      assert.match(summary, /^2 of 5 /);
      const byType = await page
        .getByRole("table", { name: "Replay by resource type and action" })
        .locator("tbody tr")
        .allTextContents();
      assert.deepEqual(byType.sort(), ["documentread2000", "documentwrite3202"].sort());
      await checkPage(page, "policy-as-code-replay");
    });

    await step(t, "Apply changes the environment; the flips are what /allowed now answers", async () => {
      await page.getByRole("button", { name: "Apply", exact: true }).click();
      await page.getByRole("status").filter({ hasText: "Applied" }).waitFor();
      const role = (await s.api("GET", `${SCHEMA}/roles/editor`)).json as { permissions: string[] };
      assert.deepEqual(role.permissions, ["document:read"]);
      const now: boolean[] = [];
      for (const check of CHECKS) now.push(await allowed(check));
      const flipped = CHECKS.filter((_, i) => now[i] !== before_[i]).map((c) => `${c.user}${c.action}`);
      assert.deepEqual(
        flipped,
        flipsShown.map((row) => /(bob|ann)(read|write)/.exec(row)?.[0]),
      );
      // The editor shows the environment's file again: the edit.
      await page.waitForFunction((text) => document.querySelector("textarea")?.value === text, edited);
      await checkPage(page, "policy-as-code-applied");
    });

    await step(t, "a stale plan: 409 in words and Re-plan", async () => {
      await editor().fill(edited.replace("document:read", "document:write"));
      await page.getByRole("button", { name: "Plan", exact: true }).click();
      await page.getByRole("table", { name: "Changes" }).waitFor();
      await s.api("POST", `${SCHEMA}/roles`, { key: "auditor", name: "Auditor" });
      await page.getByRole("button", { name: "Apply", exact: true }).click();
      const stale = page.getByRole("alert").filter({ hasText: "The environment changed since this plan" });
      await stale.waitFor();
      await stale.getByRole("button", { name: "Re-plan" }).click();
      await page.getByRole("table", { name: "Changes" }).getByText("auditor").waitFor();
      await checkPage(page, "policy-as-code-stale");
    });
    await step(t, "a read member plans and replays, and has no Apply", async () => {
      const READER = { email: "reader@example.com", password: "a reader reads all day long" };
      const invited = (
        await s.api("POST", "/v2/orgs/default/invites", [{ email: READER.email, role: "read" }])
      ).json as { success: { invite_code: string }[] };
      const accepted = await fetch(`${s.server.baseUrl}/v2/auth/invites/accept`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ invite_code: invited.success[0]?.invite_code, password: READER.password }),
      });
      assert.ok(accepted.ok, await accepted.text());
      const reader = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
      reader.setDefaultTimeout(15_000);
      s.log.watch(reader);
      await reader.goto(`${s.server.baseUrl}/login?next=/o/default/p/default/e/production/policy-as-code`);
      await reader.getByLabel("E-mail").fill(READER.email);
      await reader.locator('input[name="password"]').fill(READER.password);
      await reader.getByRole("button", { name: "Log in" }).click();
      await reader.getByRole("heading", { name: "Policy as code" }).waitFor();
      await reader.waitForFunction(() => (document.querySelector("textarea")?.value ?? "").length > 0);
      await reader.getByRole("button", { name: "Plan", exact: true }).click();
      await reader.getByRole("table", { name: "Changes" }).waitFor();
      await reader.getByRole("button", { name: "Replay the last 24 hours against this change" }).click();
      await reader.getByLabel("Replay summary").waitFor();
      // Deleting a role that holds assignments is named dangerous, on the list and on its row.
      const file = await reader.getByLabel("Policy (YAML)").inputValue();
      const withoutViewer = file.replace(/^ {2}viewer:\n(?: {4}.*\n)+/m, "");
      assert.notEqual(withoutViewer, file);
      await reader.getByLabel("Policy (YAML)").fill(withoutViewer);
      await reader.getByRole("button", { name: "Plan", exact: true }).click();
      const danger = reader.getByRole("alert").filter({ hasText: "Dangerous changes" });
      await danger.getByText("role viewer: 1 role assignment(s) are removed with it").waitFor();
      const row = reader
        .getByRole("table", { name: "Changes" })
        .getByRole("row")
        .filter({ hasText: "viewer" });
      assert.match((await row.textContent()) ?? "", /^DeleteDangerousroleviewer$/);
      assert.equal(await reader.getByRole("button", { name: "Apply", exact: true }).count(), 0);
      await checkPage(reader, "policy-as-code-reader");
      await reader.context().close();
    });

    await step(t, "a window with no decisions says so", async () => {
      await page.goto(`${s.server.baseUrl}/o/default/p/default/e/development/policy-as-code`);
      await page.getByRole("heading", { name: "Policy as code" }).waitFor();
      await page.getByRole("button", { name: "Plan", exact: true }).click();
      await page.getByRole("button", { name: "Replay the last 24 hours against this change" }).click();
      await page.getByText("The last 24 hours have no decisions to replay in this environment").waitFor();
    });
    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
