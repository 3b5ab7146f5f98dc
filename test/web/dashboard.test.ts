import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { browserUnavailable, assertAccessible, checkPage } from "../helpers/browser.ts";
import {
  dependentSteps,
  OWNER,
  setupLink,
  startDashboardSession,
  type DashboardSession,
} from "../helpers/web-session.ts";

const unavailable = browserUnavailable();

const READER = { email: "reader@example.com", password: "a reader reads all day long" };

let s: DashboardSession;
let page: Page;
/** The second member's browser (a context of its own: its own cookie). */
let second: Page;

before(async () => {
  if (unavailable) return;
  // No owner account: the first start prints the setup link that creates it.
  s = await startDashboardSession("dashboard", { owner: false });
  page = s.page;
});

after(async () => {
  await s?.close();
});

/** The day's steps depend on each other: after a failure the rest are skipped rather than timing out. */
const step = dependentSteps(() => page, "failure.png");

const heading = (name: string) => page.getByRole("heading", { name, exact: true });

test(
  "an operator's day in the dashboard: setup, login, projects and environments, environment copy, logout",
  { skip: unavailable ?? false, timeout: 180_000 },
  async (t) => {
    await step(
      t,
      "the setup link creates the owner and logs in; the first load stays under 400 KB of JS",
      async () => {
        const scripts: number[] = [];
        page.on("requestfinished", (request) => {
          if (request.resourceType() === "script") {
            void request.sizes().then((sizes) => scripts.push(sizes.responseBodySize));
          }
        });
        await page.goto(setupLink(s.server));
        await heading("Set up Gatehouse").waitFor();
        await checkPage(page, "setup");
        const firstLoad = scripts.reduce((a, b) => a + b, 0);
        assert.ok(
          firstLoad > 0 && firstLoad < 400 * 1024,
          `first load transferred ${firstLoad} bytes of JavaScript`,
        );

        await page.getByLabel("E-mail").fill(OWNER.email);
        await page.getByLabel("First name").fill("Olivia");
        await page.locator('input[name="password"]').fill("short");
        await page.getByRole("button", { name: "Create the owner account" }).click();
        // The API's error, title and message, shows in the form.
        await page.getByRole("alert").filter({ hasText: "12" }).waitFor();
        await checkPage(page, "setup-error");

        await page.locator('input[name="password"]').fill(OWNER.password);
        await page.getByRole("button", { name: "Create the owner account" }).click();
        await heading("Projects").waitFor();
        assert.match(page.url(), /\/o\/default\/projects$/);
        await page.getByRole("region", { name: "Project Default Project" }).waitFor();
        await checkPage(page, "projects");

        const members = (await s.api("GET", "/v2/members")).json as { email: string }[];
        assert.deepEqual(
          members.map((m) => m.email),
          [OWNER.email],
        );
      },
    );

    await step(t, "logout, then a wrong password shows the API's error, the right one logs in", async () => {
      await page.getByRole("button", { name: "Log out" }).click();
      await heading("Log in to Gatehouse").waitFor();
      await page.goto(`${s.server.baseUrl}/o/default/projects`);
      await heading("Log in to Gatehouse").waitFor();
      assert.match(page.url(), /\/login\?next=%2Fo%2Fdefault%2Fprojects$/);
      await page.getByLabel("E-mail").fill(OWNER.email);
      await page.locator('input[name="password"]').fill("wrong password, sorry");
      await page.getByRole("button", { name: "Log in" }).click();
      await page.getByRole("alert").waitFor();
      await checkPage(page, "login-error");
      await page.locator('input[name="password"]').fill(OWNER.password);
      await page.getByRole("button", { name: "Log in" }).click();
      await heading("Projects").waitFor();
      assert.match(page.url(), /\/o\/default\/projects$/);
    });

    await step(
      t,
      "create a project and an environment, rename it, delete another with typed confirmation",
      async () => {
        await page.getByRole("button", { name: "New project" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByLabel("Key").fill("shop");
        await dialog.getByLabel("Name").fill("Shop");
        await dialog.getByRole("button", { name: "Create" }).click();
        const shop = page.getByRole("region", { name: "Project Shop" });
        await shop.waitFor();
        await shop.getByRole("button", { name: "New environment" }).click();
        await dialog.getByLabel("Key").fill("staging");
        await dialog.getByLabel("Name").fill("Staging");
        await dialog.getByRole("button", { name: "Create" }).click();
        await shop.getByRole("link", { name: "Staging" }).waitFor();

        await shop.getByRole("button", { name: "Rename staging" }).click();
        await dialog.getByLabel("Name").fill("Staging EU");
        await dialog.getByRole("button", { name: "Save" }).click();
        await shop.getByRole("link", { name: "Staging EU" }).waitFor();

        await shop.getByRole("button", { name: "New environment" }).click();
        await dialog.getByLabel("Key").fill("scratch");
        await dialog.getByLabel("Name").fill("Scratch");
        await dialog.getByRole("button", { name: "Create" }).click();
        await shop.getByRole("link", { name: "Scratch" }).waitFor();
        await shop.getByRole("button", { name: "Delete scratch" }).click();
        await dialog.getByLabel("Type scratch to confirm").fill("scrat");
        await dialog.getByRole("button", { name: "Delete" }).click();
        await dialog.getByRole("alert").filter({ hasText: "type scratch to confirm" }).waitFor();
        await checkPage(page, "delete-environment");
        await dialog.getByLabel("Type scratch to confirm").fill("scratch");
        await dialog.getByRole("button", { name: "Delete" }).click();
        await shop.getByRole("link", { name: "Scratch" }).waitFor({ state: "detached" });

        const envs = (await s.api("GET", "/v2/projects/shop/envs")).json as { key: string; name: string }[];
        assert.equal(envs.find((e) => e.key === "staging")?.name, "Staging EU");
        assert.ok(!envs.some((e) => e.key === "scratch"));
      },
    );

    await step(
      t,
      "copy an environment: the task is followed to success, with a link to the new one",
      async () => {
        await s.api("POST", "/v2/schema/shop/staging/roles", { key: "editor", name: "Editor" });
        const shop = page.getByRole("region", { name: "Project Shop" });
        await shop.getByRole("button", { name: "Copy staging" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByLabel("New environment key").fill("staging-copy");
        await dialog.getByLabel("New environment name").fill("Staging copy");
        await dialog.getByRole("button", { name: "Copy", exact: true }).click();
        await dialog.getByText("Copied").waitFor();
        await checkPage(page, "copy-environment");
        const roles = (await s.api("GET", "/v2/schema/shop/staging-copy/roles")).json as { key: string }[];
        assert.deepEqual(
          roles.map((r) => r.key),
          ["editor"],
        );

        // Copying into it again with `fail` fails on the role it already holds: the task's error is shown.
        await dialog.getByRole("button", { name: "Close", exact: true }).click();
        await shop.getByRole("button", { name: "Copy staging", exact: true }).click();
        await dialog.getByLabel("An existing environment").check();
        await dialog.getByPlaceholder("Choose an environment").click();
        await page.getByRole("option", { name: "Staging copy" }).click();
        await dialog.getByRole("button", { name: "Copy", exact: true }).click();
        await dialog.getByRole("alert").waitFor();
        assert.match((await dialog.getByRole("alert").textContent()) ?? "", /editor|exists|conflict/i);
        await dialog.getByRole("button", { name: "Close", exact: true }).click();
      },
    );

    await step(t, "the top bar's switchers put the project and environment in the URL", async () => {
      await page.getByPlaceholder("Project", { exact: true }).click();
      await page.getByRole("option", { name: "Shop" }).click();
      // An environment opens on its overview.
      await page.waitForURL(/\/o\/default\/p\/shop\/e\/[\w-]+\/overview$/);
      await page.getByPlaceholder("Environment", { exact: true }).click();
      await page.getByRole("option", { name: "Staging copy" }).click();
      await page.waitForURL(/\/o\/default\/p\/shop\/e\/staging-copy\/overview$/);
      await page.getByRole("link", { name: "Users", exact: true }).click();
      await page.waitForURL(/\/o\/default\/p\/shop\/e\/staging-copy\/users$/);
      await heading("Users").waitFor();
      await page.getByText("No user in this environment yet.").waitFor();
    });

    await step(t, "create users (the attributes editor validates), search them server-side", async () => {
      const dialog = page.getByRole("dialog");
      await page.getByRole("button", { name: "New user" }).click();
      await dialog.getByLabel("Key").fill("alice");
      await dialog.getByLabel("E-mail").fill("alice@example.com");
      await dialog.getByLabel("First name").fill("Alice");
      await dialog.getByLabel("Attributes").fill('["not", "an object"]');
      await dialog.getByRole("button", { name: "Create" }).click();
      await dialog.getByRole("alert").filter({ hasText: "attributes must be a JSON object" }).waitFor();
      await dialog.getByLabel("Attributes").fill('{"plan": "pro"}');
      await dialog.getByRole("button", { name: "Create" }).click();
      await page.getByRole("cell", { name: "alice@example.com" }).waitFor();
      await s.api("POST", "/v2/facts/shop/staging-copy/users", { key: "bob", email: "bob@example.com" });
      await checkPage(page, "users");

      const before = s.log.requests.length;
      await page.getByLabel("Search users").fill("bob");
      await page.getByRole("cell", { name: "bob@example.com" }).waitFor();
      await page.getByRole("cell", { name: "alice@example.com" }).waitFor({ state: "detached" });
      const searches = s.log.requests.slice(before).filter((r) => r.url.includes("/users?"));
      assert.ok(searches.length >= 1);
      for (const { url } of searches) assert.equal(new URL(url).searchParams.get("per_page"), "20", url);

      const alice = (await s.api("GET", "/v2/facts/shop/staging-copy/users/alice")).json as {
        first_name: string;
        attributes: Record<string, unknown>;
      };
      assert.equal(alice.first_name, "Alice");
      assert.deepEqual(alice.attributes, { plan: "pro" });
    });

    await step(t, "edit a user: names, e-mail and attributes (the editor validates)", async () => {
      await page.getByLabel("Search users").fill("");
      await page.getByRole("button", { name: "Edit alice" }).click();
      const dialog = page.getByRole("dialog", { name: "Edit user alice" });
      assert.equal(await dialog.getByLabel("First name").inputValue(), "Alice");
      await dialog.getByLabel("Last name").fill("Liddell");
      await dialog.getByLabel("E-mail").fill("alice@wonderland.example");
      await dialog.getByLabel("Attributes").fill("42");
      await dialog.getByRole("button", { name: "Save" }).click();
      await dialog.getByRole("alert").filter({ hasText: "attributes must be a JSON object" }).waitFor();
      await checkPage(page, "user-edit");
      await dialog.getByLabel("Attributes").fill('{"plan": "team", "seats": 5}');
      await dialog.getByRole("button", { name: "Save" }).click();
      await page.getByRole("cell", { name: "Alice Liddell" }).waitFor();
      const alice = (await s.api("GET", "/v2/facts/shop/staging-copy/users/alice")).json as {
        email: string;
        last_name: string;
        attributes: Record<string, unknown>;
      };
      assert.equal(alice.email, "alice@wonderland.example");
      assert.equal(alice.last_name, "Liddell");
      assert.deepEqual(alice.attributes, { plan: "team", seats: 5 });
    });

    await step(t, "tenants: create, edit, delete one with its key typed", async () => {
      await page.getByRole("link", { name: "Tenants" }).click();
      await heading("Tenants").waitFor();
      await page.getByRole("cell", { name: "Default Tenant" }).waitFor();
      const dialog = page.getByRole("dialog");
      for (const [key, name] of [
        ["acme", "Acme"],
        ["scratch-tenant", "Scratch"],
      ]) {
        await page.getByRole("button", { name: "New tenant" }).click();
        await dialog.getByLabel("Key").fill(key!);
        await dialog.getByRole("textbox", { name: "Name", exact: true }).fill(name!);
        await dialog.getByLabel("Attributes").fill('{"tier": "gold"}');
        await dialog.getByRole("button", { name: "Create" }).click();
        await page.getByRole("cell", { name: name!, exact: true }).waitFor();
      }
      await page.getByRole("button", { name: "Edit acme" }).click();
      await dialog.getByRole("textbox", { name: "Name", exact: true }).fill("Acme Inc");
      await dialog.getByLabel("Description").fill("the first customer");
      await dialog.getByRole("button", { name: "Save" }).click();
      await page.getByRole("cell", { name: "Acme Inc" }).waitFor();
      await page.getByRole("button", { name: "Delete scratch-tenant" }).click();
      await dialog.getByLabel("Type scratch-tenant to confirm").fill("scratch-tenant");
      await dialog.getByRole("button", { name: "Delete" }).click();
      await page.getByRole("cell", { name: "Scratch", exact: true }).waitFor({ state: "detached" });
      await checkPage(page, "tenants");
      const tenants = (await s.api("GET", "/v2/facts/shop/staging-copy/tenants")).json as {
        key: string;
        name: string;
        description: string;
        attributes: Record<string, unknown>;
      }[];
      assert.deepEqual(
        tenants.filter((x) => x.key !== "default").map((x) => [x.key, x.name, x.description, x.attributes]),
        [["acme", "Acme Inc", "the first customer", { tier: "gold" }]],
      );
    });

    await step(
      t,
      "assign a role to a user in a tenant, unassign it, assign it again; the tenant's users",
      async () => {
        await page.getByRole("link", { name: "Users" }).click();
        await heading("Users").waitFor();
        await page.getByRole("button", { name: "Roles of alice" }).click();
        const dialog = page.getByRole("dialog", { name: "Roles of alice" });
        await dialog.getByText("No role assigned.").waitFor();
        const assign = async () => {
          await dialog.getByPlaceholder("Choose a role").click();
          await page.getByRole("option", { name: "Editor" }).click();
          await dialog.getByPlaceholder("Search tenants").fill("acm");
          await page.getByRole("option", { name: "Acme Inc" }).click();
          await dialog.getByRole("button", { name: "Assign" }).click();
          await dialog.getByRole("button", { name: "Unassign editor in acme" }).waitFor();
        };
        const assignments = async () =>
          (
            (await s.api("GET", "/v2/facts/shop/staging-copy/role_assignments?user=alice")).json as {
              role: string;
              tenant: string;
            }[]
          ).map((a) => `${a.role}@${a.tenant}`);
        await assign();
        await checkPage(page, "user-roles");
        assert.deepEqual(await assignments(), ["editor@acme"]);
        await dialog.getByRole("button", { name: "Unassign editor in acme" }).click();
        await dialog.getByText("No role assigned.").waitFor();
        assert.deepEqual(await assignments(), []);
        await assign();
        await dialog.getByRole("button", { name: "Cancel" }).click();
        await page.getByRole("cell", { name: "editor @ acme" }).waitFor();

        await page.getByRole("link", { name: "Tenants" }).click();
        await page.getByRole("button", { name: "Users of acme" }).click();
        const users = page.getByRole("dialog", { name: "Users of Acme Inc" });
        await users.getByRole("row").filter({ hasText: "alice" }).filter({ hasText: "editor" }).waitFor();
        await checkPage(page, "tenant-users");
        await page.keyboard.press("Escape");
        await users.waitFor({ state: "detached" });
      },
    );

    await step(t, "create an environment key, reveal its secret (it works), revoke it", async () => {
      await page.getByRole("link", { name: "API keys" }).click();
      await heading("API keys").waitFor();
      await page.getByRole("button", { name: "New API key" }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByLabel("Name").fill("staging copy writer");
      await dialog.getByPlaceholder("Choose a project").click();
      await page.getByRole("option", { name: "Shop" }).click();
      await dialog.getByPlaceholder("Choose an environment").click();
      await page.getByRole("option", { name: "Staging copy" }).click();
      await dialog.getByRole("button", { name: "Create" }).click();
      const secretBox = page
        .getByRole("dialog", { name: "Secret of staging copy writer" })
        .getByLabel("Secret");
      await secretBox.filter({ hasText: /^gh_/ }).waitFor();
      const secret = ((await secretBox.textContent()) ?? "").trim();
      await checkPage(page, "api-key-secret");
      const users = await fetch(`${s.server.baseUrl}/v2/facts/shop/staging-copy/users`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(users.status, 200);
      await page.getByRole("button", { name: "Close", exact: true }).click();
      const row = page.getByRole("row").filter({ hasText: "staging copy writer" });
      await row.filter({ hasText: OWNER.email }).filter({ hasText: "shop / staging-copy" }).waitFor();
      await checkPage(page, "api-keys");

      await row.getByRole("button", { name: "Revoke staging copy writer" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Revoke" }).click();
      await row.waitFor({ state: "detached" });
      const revoked = await fetch(`${s.server.baseUrl}/v2/facts/shop/staging-copy/users`, {
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(revoked.status, 401);
    });

    await step(t, "Settings → Organization: rename it and set its rate limit", async () => {
      await page.getByRole("link", { name: "Organization", exact: true }).click();
      await heading("Organization").waitFor();
      await page.getByRole("textbox", { name: "Name", exact: true }).fill("Acme");
      await page.getByLabel("Rate limit per minute").fill("600");
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Organization saved").waitFor();
      // The top bar's switcher shows the new name.
      await page.waitForFunction(
        () => document.querySelector<HTMLInputElement>('input[aria-label="Organization"]')?.value === "Acme",
      );
      await checkPage(page, "organization");
      const org = (await s.api("GET", "/v2/orgs/active/org")).json as {
        name: string;
        settings: Record<string, unknown>;
      };
      assert.equal(org.name, "Acme");
      assert.equal(org.settings["rate_limit_per_minute"], 600);
    });

    await step(
      t,
      "Settings → Members: invite a second member as read, who accepts the link in a second browser",
      async () => {
        await page.getByRole("link", { name: "Members", exact: true }).click();
        await heading("Members").waitFor();
        await page.getByRole("cell", { name: OWNER.email, exact: true }).waitFor();
        await page.getByRole("button", { name: "Invite member" }).click();
        const dialog = page.getByRole("dialog");
        await dialog.getByLabel("E-mail").fill(READER.email);
        await dialog.getByLabel("Access", { exact: true }).click();
        await page.getByRole("option", { name: "read", exact: true }).click();
        await dialog.getByRole("button", { name: "Invite" }).click();
        const linkBox = page
          .getByRole("dialog", { name: `Invite link for ${READER.email}` })
          .getByLabel("Invite link");
        await linkBox.filter({ hasText: "/invite/" }).waitFor();
        const link = ((await linkBox.textContent()) ?? "").trim();
        assert.ok(link.startsWith(`${s.server.baseUrl}/invite/`), link);
        await checkPage(page, "invite-link");
        await page.getByRole("button", { name: "Close", exact: true }).click();
        await page
          .getByRole("row")
          .filter({ hasText: READER.email })
          .filter({ hasText: "pending" })
          .waitFor();
        await checkPage(page, "members");

        second = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
        second.setDefaultTimeout(10_000);
        s.log.watch(second);
        await second.goto(link);
        await second.getByRole("heading", { name: "Join an organization" }).waitFor();
        await assertAccessible(second, "invite");
        await second.getByLabel("First name").fill("Rita");
        await second.locator('input[name="password"]').fill(READER.password);
        await second.getByRole("button", { name: "Accept the invite" }).click();
        await second.getByRole("heading", { name: "Projects", exact: true }).waitFor();
        // A read member sees no write controls.
        assert.equal(await second.getByRole("button", { name: "New project" }).count(), 0);

        const members = (await s.api("GET", "/v2/members")).json as {
          email: string;
          grants: { object_type: string; access_level: string }[];
        }[];
        const reader = members.find((m) => m.email === READER.email);
        assert.deepEqual(
          reader?.grants.map((g) => [g.object_type, g.access_level]),
          [["org", "read"]],
        );
      },
    );

    await step(
      t,
      "change a member's grants: write on a project, then taken away; cancel an invite",
      async () => {
        await page.reload();
        const row = page.getByRole("row").filter({ hasText: READER.email });
        await row.filter({ hasText: "organization: read" }).waitFor();
        await row.getByRole("button", { name: `Change access of ${READER.email}` }).click();
        const dialog = page.getByRole("dialog", { name: `Access of ${READER.email}` });
        await dialog.getByLabel("Grant on", { exact: true }).click();
        await page.getByRole("option", { name: "A project" }).click();
        await dialog.getByPlaceholder("Choose a project").click();
        await page.getByRole("option", { name: "Shop" }).click();
        await dialog.getByLabel("Access", { exact: true }).click();
        await page.getByRole("option", { name: "write", exact: true }).click();
        await dialog.getByRole("button", { name: "Grant" }).click();
        await dialog.getByText("shop: write").waitFor();
        await checkPage(page, "member-grants");
        const grantsOf = async () =>
          (
            (await s.api("GET", `/v2/members/${READER.email}`)).json as {
              grants: { object_type: string; access_level: string; project_key?: string }[];
            }
          ).grants
            .map((g) => `${g.object_type}:${g.project_key ?? ""}:${g.access_level}`)
            .sort();
        assert.deepEqual(await grantsOf(), ["org::read", "project:shop:write"]);
        await dialog.getByRole("button", { name: "Take away shop: write" }).click();
        await dialog.getByText("shop: write").waitFor({ state: "detached" });
        assert.deepEqual(await grantsOf(), ["org::read"]);
        await dialog.getByRole("button", { name: "Cancel" }).click();

        await page.getByRole("button", { name: "Invite member" }).click();
        await page.getByRole("dialog").getByLabel("E-mail").fill("temp@example.com");
        await page.getByRole("dialog").getByRole("button", { name: "Invite" }).click();
        await page.getByRole("button", { name: "Close", exact: true }).click();
        await page.getByRole("button", { name: "Cancel the invite for temp@example.com" }).click();
        await page.getByRole("row").filter({ hasText: "temp@example.com" }).waitFor({ state: "detached" });
        const org = (await s.api("GET", "/v2/orgs/active/org")).json as { id: string };
        const invites = (await s.api("GET", `/v2/orgs/${org.id}/invites`)).json as {
          email: string;
          status: string;
        }[];
        assert.deepEqual(
          invites.map((i) => [i.email, i.status]),
          [[READER.email, "accepted"]],
        );
      },
    );

    await step(
      t,
      "the API log: filtered by status, method and path, newest first, details, the chart",
      async () => {
        const refused = await fetch(`${s.server.baseUrl}/v2/projects`, {
          method: "POST",
          headers: { authorization: `Bearer ${s.adminKey}`, "content-type": "application/json" },
          body: JSON.stringify({ key: 1 }),
        });
        assert.equal(refused.status, 422);
        await page.getByRole("link", { name: "API log" }).click();
        await heading("API log").waitFor();
        await page.getByLabel("Calls per minute by status class").waitFor();
        await checkPage(page, "api-log");

        // The heaviest page (its chart) opened first, in a fresh browser with the same session: under 400 KB of JS.
        const fresh = await s.browser.newContext({ storageState: await page.context().storageState() });
        const visit = await fresh.newPage();
        s.log.watch(visit);
        const scripts: number[] = [];
        const files: string[] = [];
        visit.on("requestfinished", (request) => {
          if (request.resourceType() === "script") {
            files.push(new URL(request.url()).pathname);
            void request.sizes().then((sizes) => scripts.push(sizes.responseBodySize));
          }
        });
        await visit.goto(`${s.server.baseUrl}/o/default/api-log`);
        await visit.getByLabel("Calls per minute by status class").waitFor();
        await visit.waitForLoadState("networkidle");
        const firstLoad = scripts.reduce((a, b) => a + b, 0);
        assert.ok(
          files.some((f) => f.includes("ApiLogChart")),
          files.join(", "),
        );
        assert.ok(firstLoad > 0 && firstLoad < 400 * 1024, `the API log's first load: ${firstLoad} B of JS`);
        await fresh.close();

        const filters = page.getByRole("form", { name: "Filters" });
        await filters.getByLabel("Status codes").fill("422");
        await filters.getByRole("button", { name: "Apply" }).click();
        await page.waitForURL(/status=422/);
        const row = page.getByRole("row").filter({ hasText: "/v2/projects" }).filter({ hasText: "422" });
        await row.waitFor();
        await row.getByRole("button", { name: /^Details of POST \/v2\/projects/ }).click();
        const drawer = page.getByRole("dialog", { name: "Call details" });
        // Bodies are pretty-printed: one key per line.
        await drawer.getByLabel("Request body").filter({ hasText: '"key": 1' }).waitFor();
        await drawer
          .getByLabel("Response body")
          .filter({ hasText: '"error_code": "INVALID_INPUT"' })
          .waitFor();
        await checkPage(page, "api-log-details");
        await page.keyboard.press("Escape");
        await drawer.waitFor({ state: "detached" });

        // The role assignments made in the dashboard, by the owner, newest first.
        await filters.getByLabel("Status codes").fill("");
        await filters.getByLabel("Path").fill("/v2/facts/shop/staging-copy/users/alice/roles");
        await filters.getByLabel("Actor").fill(OWNER.email);
        await filters.getByRole("button", { name: "Apply" }).click();
        await page.getByText("3 calls").waitFor();
        const methods = await page.locator("tbody tr td:nth-child(3)").allTextContents();
        assert.deepEqual(methods, ["POST", "DELETE", "POST"]);
        const viaApi = (
          await s.api(
            "GET",
            `/v2/history?path=/v2/facts/shop/staging-copy/users/alice/roles&actor_display_name=${encodeURIComponent(OWNER.email)}`,
          )
        ).json as { total_count: number; data: { method: string; status: number }[] };
        assert.equal(viaApi.total_count, 3);
        assert.deepEqual(
          viaApi.data.map((e) => e.method),
          methods,
        );
      },
    );

    await step(t, "remove the second member: it is logged out of the organization at once", async () => {
      await page.getByRole("link", { name: "Members", exact: true }).click();
      await page.getByRole("button", { name: `Remove ${READER.email}` }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
      await page.getByRole("button", { name: `Remove ${READER.email}` }).waitFor({ state: "detached" });
      const members = (await s.api("GET", "/v2/members")).json as { email: string }[];
      assert.deepEqual(
        members.map((m) => m.email),
        [OWNER.email],
      );
      await second.reload();
      await second.getByRole("heading", { name: "Log in to Gatehouse" }).waitFor();
    });

    await step(t, "log out", async () => {
      await page.getByRole("button", { name: "Log out" }).click();
      await heading("Log in to Gatehouse").waitFor();
      const res = await fetch(`${s.server.baseUrl}/v2/auth/session`);
      assert.equal(res.status, 401);
    });

    await step(t, "every request the page made is a route of docs/openapi.json or a dashboard file", () => {
      s.log.assertPublicApiOnly(s.server.baseUrl);
    });
  },
);
