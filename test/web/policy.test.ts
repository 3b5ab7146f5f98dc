import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import {
  dependentSteps,
  logIn,
  startDashboardSession,
  type DashboardSession,
} from "../helpers/web-session.ts";
import { buildRebacAbacModel, choose } from "../helpers/web-policy.ts";

// The policy pages (resources, tenant roles, the policy editor, ABAC) driven in Chromium: a ReBAC + ABAC model
// built only through the dashboard, the condition builder's validation and nesting, and the policy matrix saving
// 10 roles x 50 actions in one call, and keeping its edits with the API's error when a save is refused.
const unavailable = browserUnavailable();
const S = "/v2/schema/default/production";
const envUrl = (segment: string) => `${s.server.baseUrl}/o/default/p/default/e/production/${segment}`;

let s: DashboardSession;
let page: Page;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("policy", { login: false });
  page = s.page;
});

after(async () => {
  await s?.close();
});

const step = dependentSteps(() => page, "policy-failure.png");

const heading = (name: string) => page.getByRole("heading", { name, exact: true });

test(
  "the policy pages: a model built in the dashboard, conditions, the policy matrix",
  {
    skip: unavailable ?? false,
    timeout: 300_000,
  },
  async (t) => {
    await step(t, "log in; the Policy group of the side bar leads to the four pages", async () => {
      await logIn(page, s.server.baseUrl);
      await page.goto(envUrl("users"));
      const nav = page.getByRole("navigation", { name: "Pages" });
      for (const [link, title] of [
        ["Resources", "Resources"],
        ["Tenant roles", "Tenant roles"],
        ["Policy editor", "Policy editor"],
        ["ABAC", "ABAC"],
      ] as const) {
        await nav.getByRole("link", { name: link, exact: true }).click();
        await heading(title).waitFor();
      }
    });

    await step(
      t,
      "build folder/file, parent, editors, a derivation, a tenant role, sets and a rule",
      async () => {
        await buildRebacAbacModel(page, {
          baseUrl: s.server.baseUrl,
          apiKey: s.adminKey,
          org: "default",
          proj: "default",
          env: "production",
        });
        for (const [segment, title] of [
          ["resources", "Resources"],
          ["roles", "Tenant roles"],
          ["policy", "Policy editor"],
          ["abac", "ABAC"],
        ] as const) {
          await page.goto(envUrl(segment));
          await heading(title).waitFor();
          await page.getByRole("status", { name: "Loading" }).waitFor({ state: "detached" });
          await checkPage(page, `policy-${segment}`);
        }
      },
    );

    await step(
      t,
      "an action key with a space is refused with the API's message, not split in two",
      async () => {
        const dialog = page.getByRole("dialog");
        await page.goto(envUrl("resources"));
        await page.getByRole("button", { name: "New resource" }).click();
        await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("spaced");
        await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Spaced");
        await dialog.getByLabel("Actions").fill("read, bad action");
        await dialog.getByRole("button", { name: "Create", exact: true }).click();
        await dialog.getByRole("alert").filter({ hasText: "action key 'bad action' is invalid" }).waitFor();
        await dialog.getByRole("button", { name: "Cancel", exact: true }).click();
        await dialog.waitFor({ state: "detached" });
        const res = await fetch(`${s.server.baseUrl}${S}/resources/spaced`, {
          headers: { authorization: `Bearer ${s.adminKey}` },
        });
        assert.equal(res.status, 404, "nothing was created");
      },
    );

    await step(t, "edit an attribute; a tenant role that extends another", async () => {
      const dialog = page.getByRole("dialog");
      await page.goto(envUrl("resources"));
      await page.getByRole("button", { name: "Edit attribute file.department" }).click();
      await dialog.getByLabel("Description").fill("the owning department");
      await dialog.getByRole("button", { name: "Save", exact: true }).click();
      await dialog.waitFor({ state: "detached" });
      await page.getByRole("cell", { name: "the owning department" }).waitFor();
      const file = (await s.api("GET", `${S}/resources/file`)).json;
      assert.deepEqual(
        [file.attributes.department.type, file.attributes.department.description],
        ["string", "the owning department"],
      );

      await page.goto(envUrl("roles"));
      await page.getByRole("button", { name: "New role" }).click();
      await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("auditor");
      await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Auditor");
      await dialog.getByRole("button", { name: "Create" }).click();
      await dialog.waitFor({ state: "detached" });
      await page.getByRole("button", { name: "Edit auditor" }).click();
      await choose(page, dialog.getByLabel("Extends"), "viewer");
      await dialog.getByRole("button", { name: "Save", exact: true }).click();
      await dialog.waitFor({ state: "detached" });
      await page.getByRole("row").filter({ hasText: "auditor" }).filter({ hasText: "viewer" }).waitFor();
      assert.deepEqual((await s.api("GET", `${S}/roles/auditor`)).json.extends, ["viewer"]);
    });

    await step(
      t,
      "the condition builder validates as it is typed and nests allOf / anyOf / not",
      async () => {
        await page.goto(envUrl("abac"));
        await page.getByRole("button", { name: "New user set" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("seniors");
        await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Seniors");
        const save = dialog.getByRole("button", { name: "Save", exact: true });
        // An operator the value does not fit: the engine's message, inline, and no save.
        await dialog.getByLabel("Attribute 1").fill("user.department");
        await choose(page, dialog.getByLabel("Operator 1"), "in");
        await dialog.getByLabel("Value 1", { exact: true }).fill("finance");
        await dialog.getByText("Condition 1: in expects an array").waitFor();
        assert.equal(await save.isDisabled(), true);
        await dialog.getByLabel("Value 1", { exact: true }).fill('["finance", "legal"]');
        // A path outside user/resource/context is refused as typed.
        await dialog.getByRole("button", { name: "Add condition to the conditions" }).click();
        await dialog.getByLabel("Attribute 2").fill("person.level");
        await dialog.getByLabel("Value 2", { exact: true }).fill("3");
        await dialog.getByText(/Condition 2: unknown key "person.level"/).waitFor();
        await checkPage(page, "policy-condition-invalid");
        assert.equal(await save.isDisabled(), true);
        await dialog.getByLabel("Attribute 2").fill("user.level");
        await choose(page, dialog.getByLabel("Operator 2"), "greater-than-equals");
        // A nested "any of" group, negated, with a comparison against another attribute.
        await dialog.getByRole("button", { name: "Add group to the conditions" }).click();
        await choose(page, dialog.getByLabel("Match of group 1"), "Any of (anyOf)");
        await dialog.getByText("an “any of” group needs a condition").waitFor();
        assert.equal(await save.isDisabled(), true);
        await dialog.getByRole("button", { name: "Add condition to group 1" }).click();
        await dialog.getByLabel("Attribute 3").fill("user.email");
        await choose(page, dialog.getByLabel("Operator 3"), "ends-with");
        await dialog.getByLabel("Value 3", { exact: true }).fill("@contractor.example");
        await dialog.getByRole("button", { name: "Add condition to group 1" }).click();
        await dialog.getByLabel("Attribute 4").fill("user.manager");
        await dialog.getByLabel("Value 4", { exact: true }).fill("user.key");
        await dialog.getByLabel("Value 4 is an attribute").check();
        await dialog.getByLabel("Negate group 1").check();
        await dialog.getByText("Valid", { exact: true }).waitFor();
        await checkPage(page, "policy-condition-builder");
        await save.click();
        await dialog.waitFor({ state: "detached" });
        const stored = (await s.api("GET", `${S}/condition_sets/seniors`)).json;
        assert.deepEqual(stored.conditions, {
          allOf: [
            { "user.department": { in: ["finance", "legal"] } },
            { "user.level": { "greater-than-equals": 3 } },
            {
              not: {
                anyOf: [
                  { "user.email": { "ends-with": "@contractor.example" } },
                  { "user.manager": { equals: { ref: "user.key" } } },
                ],
              },
            },
          ],
        });
        // Opened again, the stored conditions come back as the same tree.
        await page.getByRole("button", { name: "Edit seniors" }).click();
        assert.equal(await dialog.getByLabel("Attribute 4").inputValue(), "user.manager");
        assert.equal(await dialog.getByLabel("Negate group 1").isChecked(), true);
        await dialog.getByRole("button", { name: "Cancel" }).click();
        await dialog.waitFor({ state: "detached" });
      },
    );

    const ROLES = Array.from({ length: 10 }, (_, i) => `r${i + 1}`);
    const ACTIONS = Array.from({ length: 50 }, (_, i) => `a${i + 1}`);

    await step(
      t,
      "the policy matrix saves 10 roles x 50 actions in one click and a handful of requests",
      async (st) => {
        await s.api("POST", `${S}/resources`, {
          key: "doc",
          name: "Doc",
          actions: Object.fromEntries(ACTIONS.map((a) => [a, {}])),
        });
        for (const key of ROLES) await s.api("POST", `${S}/roles`, { key, name: key });
        await page.goto(envUrl("policy"));
        const doc = page.getByRole("region", { name: "Policy of doc" });
        await doc.getByRole("checkbox", { name: "r10 may a50 doc", exact: true }).waitFor();
        // Rows in the order people count: a1, a2, ..., a50 (not a1, a10, a11, ...).
        const rows = await doc.locator("tbody th[scope=row]").allInnerTexts();
        assert.deepEqual(
          rows.map((text) => text.trim()),
          ACTIONS,
        );
        for (const role of ROLES)
          await doc.getByRole("checkbox", { name: `All doc actions for ${role}`, exact: true }).check();
        assert.equal(
          await doc.getByRole("checkbox", { name: "r7 may a33 doc", exact: true }).isChecked(),
          true,
        );
        // Nothing is saved before Save.
        assert.deepEqual((await s.api("GET", `${S}/roles/r1`)).json.permissions, []);
        const before = s.log.requests.length;
        await page.getByRole("button", { name: "Save 500 changes" }).click();
        await page.getByText("Saved the permissions of 10 roles").waitFor();
        await page.getByRole("button", { name: "Save", exact: true }).waitFor();
        await page.waitForLoadState("networkidle");
        const calls = s.log.requests.slice(before).filter((r) => new URL(r.url).pathname.startsWith("/v2/"));
        assert.ok(
          calls.length <= 5,
          `${calls.length} requests: ${calls.map((c) => `${c.method} ${c.url}`).join(", ")}`,
        );
        st.diagnostic(`Save: ${calls.length} requests (${calls.map((c) => c.method).join(", ")})`);
        assert.equal(calls.filter((c) => c.method !== "GET").length, 1);
        assert.match(calls.find((c) => c.method === "POST")?.url ?? "", /\/bulk\/role_permissions$/);
        for (const role of ROLES) {
          const read = (await s.api("GET", `${S}/roles/${role}`)).json as { permissions: string[] };
          assert.deepEqual([...read.permissions].sort(), ACTIONS.map((a) => `doc:${a}`).sort(), role);
        }
        await checkPage(page, "policy-matrix");
      },
    );

    await step(t, "a refused save shows the API's error, keeps the edits and changes nothing", async () => {
      const doc = page.getByRole("region", { name: "Policy of doc" });
      await doc.getByRole("checkbox", { name: "All doc actions for r1", exact: true }).uncheck();
      await doc.getByRole("checkbox", { name: "All doc actions for r10", exact: true }).uncheck();
      // Behind the view's back, r10 goes away: the save names it and is refused as a whole.
      await s.api("DELETE", `${S}/roles/r10`);
      await page.getByRole("button", { name: "Save 100 changes" }).click();
      const alert = page.getByRole("alert").filter({ hasText: "r10" });
      await alert.waitFor();
      assert.match(await alert.innerText(), /\(404\)/);
      await checkPage(page, "policy-matrix-refused");
      // The view keeps the unsaved edits; the server keeps r1's permissions.
      assert.equal(
        await doc.getByRole("checkbox", { name: "r1 may a1 doc", exact: true }).isChecked(),
        false,
      );
      await page.getByRole("button", { name: "Save 100 changes" }).waitFor();
      const r1 = (await s.api("GET", `${S}/roles/r1`)).json as { permissions: string[] };
      assert.equal(r1.permissions.length, 50);
      // Discarding returns to the server's state.
      await page.getByRole("button", { name: "Discard changes" }).click();
      assert.equal(await doc.getByRole("checkbox", { name: "r1 may a1 doc", exact: true }).isChecked(), true);
    });

    await step(t, "a read member sees the policy pages without write controls", async () => {
      const production = (await s.api("GET", "/v2/projects/default/envs/production")).json as {
        organization_id: string;
      };
      const invited = (
        await s.api("POST", `/v2/orgs/${production.organization_id}/invites`, [
          { email: "reader@example.com", role: "read" },
        ])
      ).json as { success: { invite_code: string }[] };
      const reader = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
      reader.setDefaultTimeout(15_000);
      s.log.watch(reader);
      await reader.goto(`${s.server.baseUrl}/invite/${invited.success[0]!.invite_code}`);
      await reader.getByLabel("First name").fill("Rita");
      await reader.locator('input[name="password"]').fill("a reader reads all day long");
      await reader.getByRole("button", { name: "Accept the invite" }).click();
      await reader.getByRole("heading", { name: "Projects", exact: true }).waitFor();
      const open = async (segment: string, title: string, loaded: string) => {
        await reader.goto(envUrl(segment));
        await reader.getByRole("heading", { name: title, exact: true }).waitFor();
        await reader.getByText(loaded, { exact: true }).first().waitFor();
      };
      const none = async (role: "button" | "checkbox", name: string) =>
        assert.equal(await reader.getByRole(role, { name }).count(), 0, `${role} ${name}`);

      await open("resources", "Resources", "folder#editor via parent");
      await none("button", "New resource");
      await none("button", "Add action to folder");
      await none("button", "Edit role file#editor");
      await none("button", "Derive file#editor");
      await open("roles", "Tenant roles", "viewer");
      await none("button", "New role");
      await none("button", "Edit viewer");
      await open("policy", "Policy editor", "Doc");
      await none("button", "Save");
      await none("checkbox", "All doc actions for r1");
      assert.equal(
        await reader.getByRole("checkbox", { name: "r1 may a1 doc", exact: true }).isDisabled(),
        true,
      );
      await open("abac", "ABAC", "finance_files");
      await none("button", "New user set");
      await none("button", "Delete finance");
      assert.equal(
        await reader
          .getByRole("checkbox", { name: "finance may read finance_files", exact: true })
          .isDisabled(),
        true,
      );
      await reader.getByRole("button", { name: "Show finance", exact: true }).click();
      await reader.getByRole("dialog").getByLabel("Attribute 1").waitFor();
      await none("button", "Save");
      await checkPage(reader, "policy-abac-read-member");
      await reader.context().close();
    });

    await step(t, "every request was a route of docs/openapi.json", async () => {
      s.log.assertPublicApiOnly(s.server.baseUrl);
    });
  },
);
