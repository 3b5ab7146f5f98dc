import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import { dependentSteps, startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";
import { choose } from "../helpers/web-policy.ts";

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

const step = dependentSteps(() => s.page, "failure-env-pages.png");

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

    await step(
      t,
      "attributes: user and tenant schemas; the ABAC builder offers them and refuses what cannot hold",
      async () => {
        await page.getByRole("link", { name: "Attributes", exact: true }).click();
        await page.getByRole("heading", { name: "Attributes", exact: true }).waitFor();
        const dialog = page.getByRole("dialog");
        for (const [noun, key, type] of [
          ["user", "level", "string"],
          ["user", "age", "number"],
          ["tenant", "plan", "string"],
        ] as const) {
          await page.getByRole("button", { name: `New ${noun} attribute` }).click();
          await dialog.getByRole("textbox", { name: "Key" }).fill(key);
          await choose(page, dialog.getByRole("combobox", { name: "Type" }), type);
          await dialog.getByRole("button", { name: "Create" }).click();
          await dialog.waitFor({ state: "detached" });
          const table = page.getByRole("table", {
            name: noun === "user" ? "User attributes" : "Tenant attributes",
          });
          await table.getByRole("cell", { name: key, exact: true }).waitFor();
        }
        await checkPage(page, "attributes");
        const declared = async (resource: string) =>
          (
            (await s.api("GET", `${SCHEMA}/resources/${resource}/attributes`)).json as {
              key: string;
              type: string;
            }[]
          )
            .map((a) => `${a.key}:${a.type}`)
            .sort();
        assert.deepEqual(await declared("__user"), ["age:number", "level:string"]);
        assert.deepEqual(await declared("__tenant"), ["plan:string"]);

        await page.goto(`${envUrl()}/abac`);
        await page.getByRole("button", { name: "New user set" }).click();
        await dialog.getByRole("textbox", { name: "Key", exact: true }).fill("seniors");
        await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Seniors");
        const save = dialog.getByRole("button", { name: "Save", exact: true });
        // The declared attributes are offered, with their types.
        const offered = await dialog
          .locator("datalist option")
          .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
        assert.deepEqual(offered.sort(), ["user.age", "user.level"]);
        await dialog.getByLabel("Attribute 1").fill("user.level");
        await choose(page, dialog.getByLabel("Operator 1"), "greater-than");
        await dialog.getByLabel("Value 1", { exact: true }).fill("high");
        await dialog
          .getByText(/Condition 1: user\.level is a text attribute: “greater-than” cannot hold for it/)
          .waitFor();
        await dialog.getByText("1 problem to fix before saving").waitFor();
        assert.equal(await save.isDisabled(), true);
        await checkPage(page, "abac-typed-refusal");
        await choose(page, dialog.getByLabel("Operator 1"), "equals");
        await dialog.getByText("Valid", { exact: true }).waitFor();

        await dialog.getByRole("button", { name: "Add condition to the conditions" }).click();
        await dialog.getByLabel("Attribute 2").fill("user.age");
        await choose(page, dialog.getByLabel("Operator 2"), "greater-than-equals");
        await dialog.getByLabel("Value 2", { exact: true }).fill("old");
        await dialog
          .getByText(/Condition 2: user\.age is a number attribute and "old" is not a number/)
          .waitFor();
        assert.equal(await save.isDisabled(), true);
        await dialog.getByLabel("Value 2", { exact: true }).fill("65");
        await dialog.getByText("Valid", { exact: true }).waitFor();
        await save.click();
        await dialog.waitFor({ state: "detached" });
        const set = (await s.api("GET", `${SCHEMA}/condition_sets/seniors`)).json as { conditions: unknown };
        assert.deepEqual(set.conditions, {
          allOf: [{ "user.level": { equals: "high" } }, { "user.age": { "greater-than-equals": 65 } }],
        });
      },
    );

    await step(
      t,
      "role assignments: the environment's table, filters, assign with an expiry, unassign",
      async () => {
        await page.getByRole("link", { name: "Role assignments" }).click();
        await page.getByRole("heading", { name: "Role assignments" }).waitFor();
        const table = page.getByRole("table", { name: "Role assignments" });
        await table.getByRole("cell", { name: "globex", exact: true }).waitFor();
        await page.getByText("2 assignments").waitFor();
        await page.getByRole("textbox", { name: "Filter by tenant" }).fill("acme");
        await table.getByRole("cell", { name: "globex", exact: true }).waitFor({ state: "detached" });
        await page.getByText("1 assignments").waitFor();
        assert.match(page.url(), /[?&]tenant=acme/);
        await checkPage(page, "role-assignments");

        const expires = new Date(Date.now() + 7 * 86_400_000);
        const local = new Date(expires.getTime() - expires.getTimezoneOffset() * 60_000)
          .toISOString()
          .slice(0, 16);
        await page.getByRole("button", { name: "Assign a role" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByRole("textbox", { name: "User" }).fill("dana");
        await dialog.getByRole("combobox", { name: "Role" }).fill("viewer");
        await dialog.getByRole("textbox", { name: "Tenant" }).fill("acme");
        await dialog.getByLabel("Expires").fill(local);
        await dialog.getByRole("button", { name: "Assign" }).click();
        await dialog.waitFor({ state: "detached" });
        await table.getByRole("cell", { name: "dana", exact: true }).waitFor();
        const [held] = (await s.api("GET", `${FACTS}/role_assignments?user=dana`)).json as {
          expires_at?: string;
        }[];
        assert.equal(held?.expires_at?.slice(0, 16), expires.toISOString().slice(0, 16));

        await page.getByRole("button", { name: "Unassign viewer from dana in acme" }).click();
        await table.getByRole("cell", { name: "dana", exact: true }).waitFor({ state: "detached" });
        assert.deepEqual((await s.api("GET", `${FACTS}/role_assignments?user=dana`)).json, []);
      },
    );

    await step(
      t,
      "CSV import: users and assignments through the bulk routes, bad rows reported by line",
      async () => {
        const csv = [
          "key,email,role,tenant,expires_at",
          "erin,erin@example.com,viewer,acme,",
          "erin,,editor,globex,2999-01-01T00:00:00Z",
          "bad key!,,viewer,acme,",
          "frank,not-an-email,viewer,acme,",
          "gina,,nosuchrole,acme,",
          "hal,,viewer,nowhere,",
          "ivy,,viewer,acme,2001-01-01T00:00:00Z",
          "jo,,,,",
        ].join("\n");
        await page.getByRole("button", { name: "Import CSV" }).click();
        const dialog = page.getByRole("dialog");
        await dialog
          .locator('input[type="file"]')
          .setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
        await dialog.getByRole("button", { name: "Import", exact: true }).click();
        await dialog.getByText(/Import finished/).waitFor();
        const status = await dialog.getByRole("status", { name: "Import status" }).innerText();
        assert.match(status, /8 rows read, 3 users and 2 assignments imported, 5 rows refused/);
        const refused = dialog.getByRole("table", { name: "Refused rows" });
        const lines = await refused
          .locator("tbody tr")
          .evaluateAll((rows) =>
            rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")),
          );
        assert.deepEqual(
          lines.map((l) => [l[0], l[1]]),
          [
            ["4", "bad key!"],
            ["5", "frank"],
            ["6", "gina"],
            ["7", "hal"],
            ["8", "ivy"],
          ],
        );
        assert.match(lines[2]![2]!, /no tenant role “nosuchrole”/);
        // The unknown tenant is found by the API (the batch was split down to the row it refused).
        assert.match(lines[3]![2]!, /nowhere/);
        assert.match(lines[4]![2]!, /not in the future/);
        await checkPage(page, "role-assignments-import");
        const erin = (await s.api("GET", `${FACTS}/role_assignments?user=erin`)).json as {
          role: string;
          tenant: string;
        }[];
        assert.deepEqual(erin.map((a) => `${a.role}@${a.tenant}`).sort(), ["editor@globex", "viewer@acme"]);
        await s.api("GET", `${FACTS}/users/jo`);
        await s.api("GET", `${FACTS}/users/hal`);
        const frank = await fetch(`${s.server.baseUrl}${FACTS}/users/frank`, {
          headers: { authorization: `Bearer ${s.adminKey}` },
        });
        assert.equal(frank.status, 404);
        await dialog.getByRole("button", { name: "Close", exact: true }).click();
      },
    );

    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
