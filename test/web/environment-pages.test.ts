import { after, before, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { browserUnavailable, checkPage, SCREENSHOTS } from "../helpers/browser.ts";
import { startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// The playground's "what can this user do" across tenants and its errors in words, the attribute schemas and the
// ABAC builder's typed comparisons, the environment's role assignments: each asserted on the page and through the API.
const unavailable = browserUnavailable();
let s: DashboardSession;
const FACTS = "/v2/facts/default/production";
const SCHEMA = "/v2/schema/default/production";
const envUrl = () => `${s.server.baseUrl}/o/default/p/default/e/production`;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("env-pages", { pdp: true });
  await s.api("POST", `${SCHEMA}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {}, write: {} },
  });
  await s.api("POST", `${SCHEMA}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
  await s.api("POST", `${SCHEMA}/roles`, { key: "editor", name: "Editor", permissions: ["document:write"] });
  for (const key of ["acme", "globex"]) await s.api("POST", `${FACTS}/tenants`, { key, name: key });
  for (const key of ["bob", "dana"]) await s.api("POST", `${FACTS}/users`, { key });
  await s.api("POST", `${FACTS}/role_assignments`, { user: "bob", role: "viewer", tenant: "acme" });
  await s.api("POST", `${FACTS}/role_assignments`, { user: "bob", role: "editor", tenant: "globex" });
  // Another environment's assignment must not show.
  await s.api("POST", "/v2/facts/default/development/users", { key: "bob" });
});

after(async () => {
  await s?.close();
});

let failed = false;
function step(t: TestContext, name: string, fn: () => Promise<void>) {
  return t.test(name, { skip: failed && "an earlier step failed" }, async () => {
    try {
      await fn();
    } catch (error) {
      failed = true;
      await s.page.screenshot({ path: path.join(SCREENSHOTS, "failure-env-pages.png"), fullPage: true });
      throw error;
    }
  });
}

test(
  "an environment's playground, attributes and role assignments",
  { skip: unavailable ?? false, timeout: 240_000 },
  async (t) => {
    const { page } = s;
    const alert = () => page.getByRole("alert");

    await step(t, "what can this user do: every tenant of the user; errors are sentences", async () => {
      await page.goto(`${envUrl()}/check`);
      await page.getByRole("heading", { name: "Check playground" }).waitFor();
      await page.getByRole("button", { name: "What can this user do" }).click();
      await alert().getByText("Pick a user or type a user key.").waitFor();

      await page.getByRole("combobox", { name: "User", exact: true }).fill("bob");
      await page.getByRole("button", { name: "Check", exact: true }).click();
      await alert().getByText("Pick a resource type.").waitFor();

      await page.getByRole("button", { name: "What can this user do" }).click();
      const table = page.getByRole("table", { name: "Permissions" });
      await table.getByRole("cell", { name: "__tenant:acme", exact: true }).waitFor();
      await table.getByRole("cell", { name: "__tenant:globex", exact: true }).waitFor();
      assert.equal(await table.getByRole("cell", { name: "__tenant:default" }).count(), 0);
      await table.getByRole("cell", { name: "document:write" }).waitFor();
      await checkPage(page, "playground-all-tenants");

      // A tenant typed in narrows it to that tenant.
      await page.getByRole("textbox", { name: "Tenant" }).fill("acme");
      await page.getByRole("button", { name: "What can this user do" }).click();
      await table.getByRole("cell", { name: "__tenant:globex" }).waitFor({ state: "detached" });
      await table.getByRole("cell", { name: "__tenant:acme", exact: true }).waitFor();

      // Bad JSON and a refusal of the API are sentences.
      await page.getByRole("textbox", { name: "Context" }).fill("department: legal");
      // Leaving the field shows its own hint first (the buttons move down under it).
      await page.getByRole("textbox", { name: "Context" }).blur();
      await page.getByRole("button", { name: "What can this user do" }).click();
      await alert().getByText("The context must be a JSON object").waitFor();
      await page.getByRole("textbox", { name: "Context" }).fill("");
      await page.getByRole("textbox", { name: "Tenant" }).fill("x".repeat(600));
      await page.getByRole("button", { name: "What can this user do" }).click();
      await alert().getByText("The tenant must be at most 511 characters long.").waitFor();
      await page.getByRole("textbox", { name: "Tenant" }).fill("");

      // Picking the chosen resource type again keeps it; the clear button empties it.
      const type = page.getByRole("combobox", { name: "Resource type", exact: true });
      await type.click();
      await page.getByRole("option", { name: /document/ }).click();
      assert.equal(await type.inputValue(), "Document (document)");
      await type.click();
      await page.getByRole("option", { name: /document/ }).click();
      assert.equal(await type.inputValue(), "Document (document)");
      await page.getByRole("button", { name: "Clear the resource type" }).click();
      assert.equal(await type.inputValue(), "");
    });

    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
