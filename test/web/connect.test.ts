import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { browserUnavailable, checkPage } from "../helpers/browser.ts";
import { REPO_ROOT, startPdpProcess } from "../helpers/process.ts";
import { startDashboardSession, type DashboardSession } from "../helpers/web-session.ts";

// The Connect page's snippets, copied from the page and run as a developer would paste them: curl, OPA and
// AuthZEN against the server's own ports, the Node SDK snippet with Permit's SDK, the standalone PDP command.
const unavailable = browserUnavailable();
let s: DashboardSession;
const ENV = "/v2/facts/default/production";

before(async () => {
  if (unavailable) return;
  s = await startDashboardSession("connect", { pdp: true });
  await s.api("POST", "/v2/schema/default/production/resources", {
    key: "document",
    name: "Document",
    actions: { read: {}, write: {} },
  });
  await s.api("POST", "/v2/schema/default/production/roles", {
    key: "viewer",
    name: "Viewer",
    permissions: ["document:read"],
  });
  await s.api("POST", `${ENV}/users`, { key: "alice" });
  await s.api("POST", `${ENV}/role_assignments`, { user: "alice", role: "viewer", tenant: "default" });
  // Another environment's key must not be the one shown.
  await s.api("GET", "/v2/api-key/default/development");
});

after(async () => {
  await s?.close();
});

/** Runs a shell snippet with ENV_KEY set; its standard output. */
function runShell(code: string, key: string): string {
  return execFileSync("bash", ["-c", code], { env: { ...process.env, ENV_KEY: key }, encoding: "utf8" });
}

test(
  "Connect your app: the PDP URL and ports are the server's, the key is the environment's, the snippets work",
  { skip: unavailable ?? false, timeout: 180_000 },
  async () => {
    const { page, server } = s;
    await page.goto(`${server.baseUrl}/o/default/p/default/e/production/overview`);
    await page.getByRole("link", { name: "Connect your app" }).click();
    await page.getByRole("heading", { name: "Connect your app" }).waitFor();
    const text = async (label: string) => (await page.getByLabel(label, { exact: true }).innerText()).trim();
    assert.equal(await text("PDP URL"), `http://127.0.0.1:${server.pdpPort}`);
    assert.equal(await text("API URL"), server.baseUrl);

    await page.getByRole("button", { name: "Reveal the environment key" }).click();
    await page
      .getByLabel("Environment key", { exact: true })
      .getByText(/\S{20,}/)
      .waitFor();
    const key = await text("Environment key");
    const expected = (await s.api("GET", "/v2/api-key/default/production")).json as { secret: string };
    assert.equal(key, expected.secret);
    await checkPage(page, "connect");

    const snippet = async (tab: string) => {
      await page.getByRole("tab", { name: tab, exact: true }).click();
      return text(`${tab} snippet`);
    };
    const curl = await snippet("curl");
    assert.ok(curl.includes(`http://127.0.0.1:${server.pdpPort}/allowed`), curl);
    assert.equal((JSON.parse(runShell(curl, key)) as { allow: boolean }).allow, true);
    // The same request shape with a user who holds nothing is a deny: the answer is the PDP's decision.
    const denied = JSON.parse(runShell(curl.replace('"alice"', '"nobody"'), key)) as { allow: boolean };
    assert.equal(denied.allow, false);

    const opa = await snippet("OPA");
    assert.ok(opa.includes(`http://127.0.0.1:${s.opaPort}/v1/data/permit/root`), opa);
    assert.equal((JSON.parse(runShell(opa, key)) as { result: { allow: boolean } }).result.allow, true);

    const authzen = await snippet("AuthZEN");
    assert.equal((JSON.parse(runShell(authzen, key)) as { decision: boolean }).decision, true);

    // The Node snippet with Permit's SDK (a file in the repository, so that `permitio` resolves).
    const node = await snippet("Node.js");
    const file = path.join(REPO_ROOT, "test", "web", `.connect-${process.pid}.mjs`);
    fs.writeFileSync(file, node);
    try {
      const out = execFileSync(process.execPath, [file], {
        env: { ...process.env, ENV_KEY: key },
        encoding: "utf8",
      });
      assert.equal(out.trim(), "true");
    } finally {
      fs.rmSync(file, { force: true });
    }

    const python = await snippet("Python");
    assert.ok(
      python.includes(`pdp="http://127.0.0.1:${server.pdpPort}", api_url="${server.baseUrl}"`),
      python,
    );

    // The standalone PDP's command line, started as written (its port chosen by the helper), answers the check.
    const standalone = await snippet("Standalone PDP");
    const command = standalone.split("\n")[0]!;
    assert.match(command, /^bin\/gatehouse\.js pdp /);
    const args = command
      .replace(/^bin\/gatehouse\.js pdp /, "")
      .replace('"$ENV_KEY"', key)
      .split(" ");
    const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-connect-pdp-"));
    const pdp = await startPdpProcess({ GATEHOUSE_DATA_DIR: pdpDir }, args);
    try {
      const answer = await fetch(`${pdp.baseUrl}/allowed`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ user: { key: "alice" }, action: "read", resource: { type: "document" } }),
      });
      assert.equal(((await answer.json()) as { allow: boolean }).allow, true);
    } finally {
      await pdp.stop();
      fs.rmSync(pdpDir, { recursive: true, force: true });
    }
    s.log.assertPublicApiOnly(server.baseUrl);
  },
);
