import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { httpOk } from "../helpers/process.ts";
import { browserUnavailable } from "../helpers/browser.ts";
import { exploreThroughDashboard } from "../helpers/web-explore.ts";
import { buildRebacAbacModel } from "../helpers/web-policy.ts";
import {
  fillLogin,
  OWNER,
  setupLink,
  startDashboardSession,
  type DashboardSession,
} from "../helpers/web-session.ts";

const unavailable = browserUnavailable();

let s: DashboardSession;

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("explore", { pdp: true, owner: false });
});

after(async () => {
  await s?.close();
});

test(
  "explore in the dashboard: instances, tuples, roles, the playground's grant path and closest miss, the decision log",
  { skip: unavailable ?? false, timeout: 180_000 },
  async () => {
    const { page } = s;
    await page.goto(setupLink(s.server));
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("First name").fill("Olivia");
    await page.locator('input[name="password"]').fill(OWNER.password);
    await page.getByRole("button", { name: "Create the owner account" }).click();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();

    // Issue 21's whole path through the dashboard: the model built on the policy pages, then users, instances,
    // tuples, the playground and the decision log on the authorization pages.
    const place = {
      baseUrl: s.server.baseUrl,
      apiKey: s.adminKey,
      org: "default",
      proj: "default",
      env: "production",
    };
    await buildRebacAbacModel(page, place);
    const names = await exploreThroughDashboard({ page, ...place, attributes: '{"department": "finance"}' });

    // The same model through the API: the dashboard's writes are there.
    const tuples = (await s.api("GET", "/v2/facts/default/production/relationship_tuples")).json as {
      subject: string;
      relation: string;
      object: string;
    }[];
    assert.deepEqual(
      tuples.map((t) => `${t.subject} ${t.relation} ${t.object}`),
      [`folder:${names.folder} parent file:${names.file}`],
    );
    const carol = (await s.api("GET", `/v2/facts/default/production/users/${names.attributed}`)).json as {
      attributes: Record<string, unknown>;
    };
    assert.deepEqual(carol.attributes, { department: "finance" });

    // The same checks on the control plane (API key) and on the PDP's SDK-shaped /allowed agree.
    const pdpKey = (await s.api("GET", "/v2/api-key/default/production")).json.secret as string;
    const checks = [
      { user: names.editor, action: "write", resource: { type: "file", key: names.file }, allow: true },
      { user: names.editor, action: "delete", resource: { type: "file", key: names.file }, allow: false },
      { user: names.editor, action: "write", resource: { type: "folder", key: names.folder }, allow: true },
      {
        user: { key: names.attributed, attributes: { department: "finance" } },
        action: "read",
        resource: { type: "file", attributes: { department: "finance" } },
        allow: true,
      },
      {
        user: { key: names.attributed, attributes: { department: "finance" } },
        action: "read",
        resource: { type: "file", attributes: { department: "legal" } },
        allow: false,
      },
      { user: names.attributed, action: "write", resource: { type: "file", key: names.file }, allow: false },
    ];
    for (const { allow, ...body } of checks) {
      const viaApi = (
        await httpOk(s.server.baseUrl, pdpKey, "POST", "/v2/pdps/default/production/allowed", body)
      ).json as { allow: boolean; reason: unknown };
      const pdp = await fetch(`http://127.0.0.1:${s.server.pdpPort}/allowed`, {
        method: "POST",
        headers: { authorization: `Bearer ${pdpKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const viaPdp = (await pdp.json()) as { allow: boolean; debug: { reason: unknown } };
      assert.equal(viaApi.allow, allow, JSON.stringify(body));
      assert.equal(viaPdp.allow, allow, JSON.stringify(body));
      assert.deepEqual(viaPdp.debug.reason, viaApi.reason);
    }
    const derived = (
      await httpOk(s.server.baseUrl, pdpKey, "POST", "/v2/pdps/default/production/allowed", checks[0])
    ).json as { reason: unknown };
    assert.deepEqual(derived.reason, {
      kind: "rebac",
      role: "editor",
      instance: `file:${names.file}`,
      tenant: "default",
      via: [{ role: "editor", instance: `folder:${names.folder}`, relation: "parent" }],
    });

    // A read member: no write controls on the new pages, and checks are reads, so the playground answers.
    const READER = { email: "reader@example.com", password: "a reader reads all day long" };
    const invited = (await s.api("POST", "/v2/orgs/default/invites", [{ email: READER.email, role: "read" }]))
      .json as { success: { invite_code: string }[] };
    const code = invited.success[0]?.invite_code ?? "";
    const accepted = await fetch(`${s.server.baseUrl}/v2/auth/invites/accept`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ invite_code: code, password: READER.password, first_name: "Rita" }),
    });
    assert.ok(accepted.ok, await accepted.text());
    const reader = await (await s.browser.newContext({ reducedMotion: "reduce" })).newPage();
    reader.setDefaultTimeout(10_000);
    s.log.watch(reader);
    await reader.goto(`${s.server.baseUrl}/login?next=/o/default/p/default/e/production/instances`);
    await fillLogin(reader, READER);
    await reader.getByRole("heading", { name: "Instances and relationships" }).waitFor();
    await reader
      .getByRole("table", { name: "Instances" })
      .getByRole("cell", { name: `file:${names.file}`, exact: true })
      .waitFor();
    await reader.getByRole("button", { name: `Open file:${names.file}` }).click();
    await reader.getByRole("figure", { name: /^Graph around file:/ }).waitFor();
    for (const name of ["New instance", "New tuple", "Assign a role", "Edit attributes"])
      assert.equal(await reader.getByRole("button", { name }).count(), 0, `a read member sees ${name}`);
    assert.equal(await reader.getByRole("button", { name: /^Delete/ }).count(), 0);
    await reader.getByRole("link", { name: "Check playground", exact: true }).click();
    await reader.getByRole("combobox", { name: "Resource type", exact: true }).click();
    await reader.getByRole("option", { name: "File (file)", exact: true }).click();
    await reader.getByRole("combobox", { name: "User", exact: true }).fill(names.editor);
    await reader.getByRole("combobox", { name: "Action", exact: true }).fill("read");
    await reader.keyboard.press("Escape");
    await reader.getByLabel("Instance key").fill(names.file);
    await reader.getByRole("button", { name: "Check", exact: true }).click();
    await reader.getByRole("region", { name: "Decision" }).getByText("Allowed").waitFor();

    s.log.assertPublicApiOnly(s.server.baseUrl);
  },
);
