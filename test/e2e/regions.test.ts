import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { Permit } from "permitio";
import { freePort, httpOk, REPO_ROOT, startServerProcess } from "../helpers/process.ts";
import { browserUnavailable, ensureDashboardBuilt, launchChromium } from "../helpers/browser.ts";

const SECRET = "inter-region-secret-for-the-e2e-test-000";
const US_BOOTSTRAP = "us-bootstrap-admin-key-for-regions-000000";
const EU_BOOTSTRAP = "eu-bootstrap-admin-key-for-regions-000000";
/** The body of a call sent to the wrong region: it must be stored nowhere. */
const MARKER = "body-that-must-not-be-stored-anywhere";

async function call(base: string, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, json: (text ? JSON.parse(text) : undefined) as any };
}

/** Every row of a SQLite file whose table has a column named `column` equal to `value`. */
function rowsWith(file: string, column: string, values: string[]): string[] {
  const db = new Database(file, { readonly: true });
  try {
    const found: string[] = [];
    const tables = db.prepare("select name from sqlite_master where type = 'table'").all() as {
      name: string;
    }[];
    for (const { name } of tables) {
      const columns = db.prepare(`pragma table_info("${name}")`).all() as { name: string }[];
      if (!columns.some((c) => c.name === column)) continue;
      for (const value of values) {
        const n = db.prepare(`select count(*) as n from "${name}" where "${column}" = ?`).get(value) as {
          n: number;
        };
        if (n.n > 0) found.push(`${name}.${column} = ${value}: ${n.n}`);
      }
    }
    return found;
  } finally {
    db.close();
  }
}

test("regions: an organization created for the EU lives only in the EU deployment; its keys are sent there with 421", async () => {
  const [usPort, euPort] = [await freePort(), await freePort()];
  const usUrl = `http://127.0.0.1:${usPort}`;
  const euUrl = `http://127.0.0.1:${euPort}`;
  const regions = `us=${usUrl},eu=${euUrl}`;
  const usDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-us-"));
  const euDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-eu-"));
  let euAdminKeyId = "";
  // Before the servers start: they serve the files the build left.
  if (browserUnavailable() === undefined) ensureDashboardBuilt();
  // The OPA-compatible port is off: its fixed default would collide between the two (and with other suites).
  const common = { GATEHOUSE_REGIONS: regions, GATEHOUSE_REGION_SECRET: SECRET, GATEHOUSE_OPA_PORT: "0" };
  const us = await startServerProcess(
    {
      ...common,
      GATEHOUSE_REGION: "us",
      GATEHOUSE_DATA_DIR: usDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: US_BOOTSTRAP,
    },
    [],
    { port: usPort, pdp: true },
  );
  const eu = await startServerProcess(
    {
      ...common,
      GATEHOUSE_REGION: "eu",
      GATEHOUSE_DATA_DIR: euDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: EU_BOOTSTRAP,
    },
    [],
    { port: euPort, pdp: true },
  );
  try {
    // A default-region admin creates an organization in the EU: the EU deployment creates it and answers.
    const created = await httpOk(usUrl, US_BOOTSTRAP, "POST", "/v2/orgs", {
      key: "acme-eu",
      name: "Acme Europe",
      region: "eu",
    });
    const org = created.json;
    assert.equal(org.region, "eu");
    assert.equal(org.api_url, euUrl);
    assert.match(org.api_key_secret, /^gh_eu_[A-Za-z0-9_-]{43}$/, "the secret names its region");
    const euAdmin = org.api_key_secret as string;
    euAdminKeyId = org.api_key_id as string;
    assert.equal((await call(usUrl, US_BOOTSTRAP, "GET", "/v2/orgs/active/org")).json.region, "us");
    const duplicate = await call(usUrl, US_BOOTSTRAP, "POST", "/v2/orgs", {
      key: "acme-eu",
      name: "x",
      region: "eu",
    });
    assert.equal(duplicate.status, 409, "the EU deployment's refusal, as it gave it");
    const unknown = await call(usUrl, US_BOOTSTRAP, "POST", "/v2/orgs", {
      key: "acme-ap",
      name: "x",
      region: "ap",
    });
    assert.equal(unknown.status, 422);

    // Where to log in: each deployment lists every region, and says which it is.
    const listed = await (await fetch(`${usUrl}/v2/auth/regions`)).json();
    assert.deepEqual(listed, {
      region: "us",
      regions: [
        { region: "us", api_url: usUrl },
        { region: "eu", api_url: euUrl },
      ],
    });
    assert.equal((await (await fetch(`${euUrl}/v2/auth/regions`)).json()).region, "eu");
    if (browserUnavailable() === undefined) {
      // The dashboard's login page sends a person to their organization's region.
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await page.goto(`${usUrl}/login`);
        await page.getByLabel("Region of your organization").selectOption("eu");
        await page.waitForURL(`${euUrl}/login`);
        assert.equal(await page.getByLabel("Region of your organization").inputValue(), "eu");
      } finally {
        await browser.close();
      }
    }

    // Its key works at the EU URL ...
    const active = await httpOk(euUrl, euAdmin, "GET", "/v2/orgs/active/org");
    assert.equal(active.json.id, org.id);
    assert.equal(active.json.api_url, euUrl);
    await httpOk(euUrl, euAdmin, "POST", "/v2/facts/default/production/users", { key: "eu-only-user" });

    // ... and at the default URL it is sent to the EU at once, body unread, on the API and on the PDP.
    for (const [method, url, body] of [
      ["GET", "/v2/orgs/active/org", undefined],
      ["POST", "/v2/facts/default/production/users", { key: MARKER }],
    ] as const) {
      const misdirected = await call(usUrl, euAdmin, method, url, body);
      assert.equal(misdirected.status, 421, `${method} ${url}`);
      assert.equal(misdirected.json.error_code, "WRONG_REGION");
      assert.equal(misdirected.json.additional_info.api_url, euUrl);
      assert.match(misdirected.json.message, new RegExp(euUrl.replace(/[.]/g, "\\.")));
    }
    const pdpCheck = await call(`http://127.0.0.1:${us.pdpPort}`, euAdmin, "POST", "/allowed", {
      user: { key: "eu-only-user" },
      action: "read",
      resource: { type: "document" },
    });
    assert.equal(pdpCheck.status, 421);
    assert.equal(pdpCheck.json.additional_info.api_url, euUrl);

    // A standalone PDP with an EU key and the default control plane fails at once, naming the EU URL.
    const envKey = (await httpOk(euUrl, euAdmin, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    assert.match(envKey, /^gh_eu_/);
    const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pdp-"));
    const started = Date.now();
    const pdp = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "pdp"], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        GATEHOUSE_CONTROL_PLANE_URL: usUrl,
        GATEHOUSE_PDP_API_KEY: envKey,
        GATEHOUSE_PDP_PORT: String(await freePort()),
        GATEHOUSE_OPA_PORT: "0",
        GATEHOUSE_DATA_DIR: pdpDir,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let pdpOutput = "";
    pdp.stdout.on("data", (d: Buffer) => (pdpOutput += d.toString()));
    pdp.stderr.on("data", (d: Buffer) => (pdpOutput += d.toString()));
    const code = await new Promise<number | null>((resolve) => pdp.once("exit", resolve));
    fs.rmSync(pdpDir, { recursive: true, force: true });
    assert.notEqual(code, 0, pdpOutput);
    assert.match(pdpOutput, /region 'eu'/);
    assert.ok(pdpOutput.includes(euUrl), pdpOutput);
    assert.ok(Date.now() - started < 30_000, "it fails at once rather than retrying");

    // Permit's published SDK, given the EU URLs, creates and checks.
    const permit = new Permit({ token: envKey, apiUrl: euUrl, pdp: `http://127.0.0.1:${eu.pdpPort}` });
    await permit.api.resources.create({
      key: "document",
      name: "Document",
      actions: { read: {}, write: {} },
    });
    await permit.api.roles.create({ key: "reader", name: "Reader", permissions: ["document:read"] });
    await permit.api.users.sync({ key: "eu-alice", email: "alice@example.eu" });
    await permit.api.users.assignRole({ user: "eu-alice", role: "reader", tenant: "default" });
    assert.equal(await permit.check("eu-alice", "read", "document"), true);
    assert.equal(await permit.check("eu-alice", "write", "document"), false);
  } finally {
    await us.stop();
    await eu.stop();
  }
  try {
    // Nothing of the EU organization is stored by the default deployment: no row names it or its environments.
    const usFile = path.join(usDir, "gatehouse.db");
    const euFile = path.join(euDir, "gatehouse.db");
    const euEnvironments = (() => {
      const db = new Database(euFile, { readonly: true });
      try {
        return db.prepare("select id from environments").all() as { id: string }[];
      } finally {
        db.close();
      }
    })().map((e) => e.id);
    const euOrg = rowsWith(euFile, "key", ["acme-eu"]);
    assert.ok(
      euOrg.some((r) => r.startsWith("organizations.")),
      "the EU deployment holds it",
    );
    const orgId = (() => {
      const db = new Database(euFile, { readonly: true });
      try {
        return (db.prepare("select id from organizations where key = 'acme-eu'").get() as { id: string }).id;
      } finally {
        db.close();
      }
    })();
    assert.deepEqual(rowsWith(usFile, "organization_id", [orgId]), []);
    assert.deepEqual(rowsWith(usFile, "environment_id", euEnvironments), []);
    assert.deepEqual(rowsWith(usFile, "id", [orgId]), []);
    const usBytes = fs.readFileSync(usFile).toString("latin1");
    assert.ok(!usBytes.includes(MARKER), "the misdirected call's body is stored nowhere");
    // The default region's API log keeps the creating call, but nothing of what it created in the EU.
    for (const [what, value] of [
      ["id", orgId],
      ["name", "Acme Europe"],
      ["admin key", euAdminKeyId],
    ] as const) {
      assert.ok(
        !usBytes.includes(value),
        `the EU organization's ${what} is stored nowhere in the default region`,
      );
    }
    const usLog = new Database(usFile, { readonly: true });
    try {
      const created = usLog
        .prepare(
          "select status, request_body, response_body from api_log where method = 'POST' and path = '/v2/orgs'",
        )
        .all() as { status: number; request_body: string | null; response_body: string | null }[];
      assert.ok(
        created.some((r) => r.status === 200),
        "the call itself is in the caller's API log",
      );
      assert.ok(created.every((r) => r.request_body === null && r.response_body === null));
    } finally {
      usLog.close();
    }
  } finally {
    fs.rmSync(usDir, { recursive: true, force: true });
    fs.rmSync(euDir, { recursive: true, force: true });
  }
});

/** Runs `gatehouse ...` to its end; its exit code and output. */
async function gatehouse(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, out };
}

/** Rows per table of one organization in a SQLite file (by its own column, or by its environments). */
function countsOf(file: string, orgId: string): Record<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    const counts: Record<string, number> = {};
    const tables = db.prepare("select name from sqlite_master where type = 'table'").all() as {
      name: string;
    }[];
    for (const { name } of tables) {
      const columns = (db.prepare(`pragma table_info("${name}")`).all() as { name: string }[]).map(
        (c) => c.name,
      );
      const where = columns.includes("organization_id")
        ? "organization_id = ?"
        : columns.includes("environment_id")
          ? "environment_id in (select id from environments where organization_id = ?)"
          : name === "organizations"
            ? "id = ?"
            : undefined;
      if (where === undefined) continue;
      counts[name] = (
        db.prepare(`select count(*) as n from "${name}" where ${where}`).get(orgId) as { n: number }
      ).n;
    }
    return counts;
  } finally {
    db.close();
  }
}

test("regions: an organization moves from one region to another by export and import, whole; the old region no longer serves it", async () => {
  const [usPort, euPort] = [await freePort(), await freePort()];
  const usUrl = `http://127.0.0.1:${usPort}`;
  const euUrl = `http://127.0.0.1:${euPort}`;
  const usDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-us-"));
  const euDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-eu-"));
  const exportFile = path.join(usDir, "acme.jsonl");
  const owner = { email: "owner@example.com", password: "a long enough owner password" };
  const usEnv = {
    GATEHOUSE_REGIONS: `us=${usUrl},eu=${euUrl}`,
    GATEHOUSE_OPA_PORT: "0",
    GATEHOUSE_REGION: "us",
    GATEHOUSE_DATA_DIR: usDir,
    GATEHOUSE_LOG_LEVEL: "warn",
  };
  const euEnv = { ...usEnv, GATEHOUSE_REGION: "eu", GATEHOUSE_DATA_DIR: euDir };
  const us = await startServerProcess(
    {
      ...usEnv,
      GATEHOUSE_BOOTSTRAP_API_KEY: US_BOOTSTRAP,
      GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: owner.email,
      GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: owner.password,
    },
    [],
    { port: usPort, pdp: true },
  );
  let eu: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    // Some of everything: schema, facts, an assignment, checks (decision log), calls (API log).
    const F = "/v2/facts/default/production";
    const S = "/v2/schema/default/production";
    await httpOk(usUrl, US_BOOTSTRAP, "POST", `${S}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {}, write: {} },
    });
    await httpOk(usUrl, US_BOOTSTRAP, "POST", `${S}/roles`, {
      key: "reader",
      name: "Reader",
      permissions: ["document:read"],
    });
    for (const key of ["ann", "bob", "cid"])
      await httpOk(usUrl, US_BOOTSTRAP, "POST", `${F}/users`, { key, attributes: { key } });
    await httpOk(usUrl, US_BOOTSTRAP, "POST", `${F}/users/ann/roles`, { role: "reader", tenant: "default" });
    const envKey = (await httpOk(usUrl, US_BOOTSTRAP, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    const check = (base: string, key: string) =>
      call(base, key, "POST", "/allowed", {
        user: { key: "ann" },
        action: "read",
        resource: { type: "document", tenant: "default" },
      });
    assert.equal((await check(`http://127.0.0.1:${us.pdpPort}`, envKey)).json.allow, true);
    const orgId = (await httpOk(usUrl, US_BOOTSTRAP, "GET", "/v2/orgs/active/org")).json.id as string;

    const exported = await gatehouse(
      ["orgs", "export", "--org", "default", "--to", "eu", "--file", exportFile],
      usEnv,
    );
    assert.equal(exported.code, 0, exported.out);
    assert.doesNotMatch(
      fs.readFileSync(exportFile, "utf8"),
      /gh_us_[A-Za-z0-9_-]{43}/,
      "no key secret leaves the region",
    );
    const imported = await gatehouse(["orgs", "import", "--file", exportFile], euEnv);
    assert.equal(imported.code, 0, imported.out);
    const secrets = [...imported.out.matchAll(/(gh_eu_[A-Za-z0-9_-]{43})\s+(.*)/g)].map((m) => ({
      secret: m[1] as string,
      what: m[2] as string,
    }));
    const euAdmin = secrets.find((s) => s.what.endsWith(", organization"))?.secret;
    assert.ok(euAdmin, imported.out);
    assert.equal(
      (await gatehouse(["orgs", "import", "--file", exportFile], euEnv)).code,
      2,
      "an organization already there is refused",
    );

    // Every row arrived (the API log gained the calls made since the export); a sample is the same.
    const usCounts = countsOf(path.join(usDir, "gatehouse.db"), orgId);
    eu = await startServerProcess(euEnv, [], { port: euPort, pdp: true });
    const euCounts = countsOf(path.join(euDir, "gatehouse.db"), orgId);
    for (const [table, n] of Object.entries(usCounts)) {
      if (table === "api_log" || table === "sessions" || table === "invites") continue;
      assert.equal(euCounts[table], n, `${table}: ${euCounts[table]} rows in the EU, ${n} in the US`);
    }
    assert.ok(
      (euCounts["users"] ?? 0) >= 3 && (euCounts["decision_log_chunks"] ?? 0) >= 1,
      JSON.stringify(euCounts),
    );
    const usUser = (await httpOk(usUrl, US_BOOTSTRAP, "GET", `${F}/users/bob`)).json;
    assert.deepEqual((await httpOk(euUrl, euAdmin, "GET", `${F}/users/bob`)).json, usUser);
    const euEnvKey = (await httpOk(euUrl, euAdmin, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    assert.match(euEnvKey, /^gh_eu_/);
    assert.equal((await check(`http://127.0.0.1:${eu.pdpPort}`, euEnvKey)).json.allow, true);
    const login = await fetch(`${euUrl}/v2/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(owner),
    });
    assert.equal(login.status, 200, "the owner logs in at the new region with the same password");

    // The old region lets it go: its keys stop working there; the new keys are sent to the EU.
    const deleted = await gatehouse(["orgs", "delete", "--org", "default", "--confirm", "default"], usEnv);
    assert.equal(deleted.code, 0, deleted.out);
    assert.equal((await call(usUrl, US_BOOTSTRAP, "GET", "/v2/orgs/active/org")).status, 401);
    assert.equal((await call(usUrl, euAdmin, "GET", "/v2/orgs/active/org")).status, 421);
    assert.deepEqual(
      Object.entries(countsOf(path.join(usDir, "gatehouse.db"), orgId)).filter(([, n]) => n > 0),
      [],
    );
  } finally {
    await us.stop();
    await eu?.stop();
    fs.rmSync(usDir, { recursive: true, force: true });
    fs.rmSync(euDir, { recursive: true, force: true });
  }
});
