import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { TOTP } from "otpauth";
import { REPO_ROOT, startServerProcess } from "../helpers/process.ts";

const json = { "content-type": "application/json" };

async function post(base: string, url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}${url}`, {
    method: "POST",
    headers: { ...json, ...headers },
    body: JSON.stringify(body),
  });
}

/** A session over real HTTP: the cookie the server set and the CSRF token it returned. */
async function sessionOf(res: Response) {
  assert.equal(res.status, 200, await res.clone().text());
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
  return { cookie, csrf: ((await res.json()) as { csrf_token: string }).csrf_token };
}

/** `gatehouse members ...` as an operator runs it; stdin is written and closed. */
function cli(
  args: string[],
  env: Record<string, string>,
  stdin = "",
): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "members", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out })));
}

test("first start: a one-time setup link creates the owner, who logs in over HTTP; the link is printed only while nobody is a member", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-"));
  try {
    const first = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir });
    const link = /(http:\/\/\S+)\/setup\/([A-Za-z0-9_-]{43})/.exec(first.output());
    assert.ok(link, `the first start prints a setup link:\n${first.output()}`);
    assert.equal(link[1], first.baseUrl, "the link is on the public URL");
    const setup = await post(first.baseUrl, "/v2/auth/setup", {
      setup_token: link[2],
      email: "Owner@Example.test",
      password: "the owner's passphrase",
    });
    const owner = await sessionOf(setup);
    const me = await fetch(`${first.baseUrl}/v2/members/me`, { headers: { cookie: owner.cookie } });
    assert.equal(me.status, 200);
    const body = (await me.json()) as {
      email: string;
      grants: { object_type: string; access_level: string }[];
    };
    assert.equal(body.email, "owner@example.test");
    assert.deepEqual(
      body.grants.map((g) => `${g.object_type}:${g.access_level}`),
      ["org:admin"],
    );
    // a browser write: the cookie, the CSRF token, and the page's origin
    const created = await post(
      first.baseUrl,
      "/v2/projects",
      { key: "by-owner", name: "By the owner" },
      { cookie: owner.cookie, "x-csrf-token": owner.csrf, origin: first.baseUrl },
    );
    assert.equal(created.status, 200, await created.text());
    const reused = await post(first.baseUrl, "/v2/auth/setup", {
      setup_token: link[2],
      email: "second@example.test",
      password: "the owner's passphrase",
    });
    assert.equal(reused.status, 404);
    assert.equal(await first.stop("SIGTERM"), 0);

    const second = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir });
    assert.doesNotMatch(second.output(), /\/setup\//, "an owner exists: no new link");
    const login = await post(second.baseUrl, "/v2/auth/login", {
      email: "owner@example.test",
      password: "the owner's passphrase",
    });
    // the owner turns on a second factor: then the password alone is not enough
    const withPassword = await sessionOf(login);
    const asOwner = {
      cookie: withPassword.cookie,
      "x-csrf-token": withPassword.csrf,
      origin: second.baseUrl,
    };
    const enrol = await post(second.baseUrl, "/v2/auth/two-factor/enrol", {}, asOwner);
    const { secret } = (await enrol.json()) as { secret: string };
    const confirm = await post(
      second.baseUrl,
      "/v2/auth/two-factor/confirm",
      { totp_code: new TOTP({ secret }).generate() },
      asOwner,
    );
    assert.equal(confirm.status, 200, await confirm.text());
    const needsCode = await post(second.baseUrl, "/v2/auth/login", {
      email: "owner@example.test",
      password: "the owner's passphrase",
    });
    assert.equal(needsCode.status, 401);
    assert.equal(await second.stop("SIGTERM"), 0);

    // the command line, on the database: a new admin (password from the environment), then a reset (from stdin)
    const env = { GATEHOUSE_DATA_DIR: dataDir };
    const added = await cli(["add", "--email", "ops@example.test", "--role", "admin"], {
      ...env,
      GATEHOUSE_MEMBER_PASSWORD: "operator's passphrase",
    });
    assert.equal(added.code, 0, added.out);
    assert.doesNotMatch(added.out, /operator's passphrase/);
    const reset = await cli(
      ["reset-password", "--email", "owner@example.test"],
      env,
      "a brand new passphrase\n",
    );
    assert.equal(reset.code, 0, reset.out);
    const weak = await cli(["reset-password", "--email", "owner@example.test"], env, "short\n");
    assert.equal(weak.code, 2, weak.out);
    // the owner lost the authenticator app and the recovery codes: the operator removes the factor
    const reset2fa = await cli(["reset-2fa", "--email", "owner@example.test"], env);
    assert.equal(reset2fa.code, 0, reset2fa.out);
    assert.match(reset2fa.out, /Second factor removed for owner@example\.test/);
    const third = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir });
    await sessionOf(
      await post(third.baseUrl, "/v2/auth/login", {
        email: "ops@example.test",
        password: "operator's passphrase",
      }),
    );
    await sessionOf(
      await post(third.baseUrl, "/v2/auth/login", {
        email: "owner@example.test",
        password: "a brand new passphrase",
      }),
    );
    const old = await post(third.baseUrl, "/v2/auth/login", {
      email: "owner@example.test",
      password: "the owner's passphrase",
    });
    assert.equal(old.status, 401);
    assert.equal(await third.stop("SIGTERM"), 0);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL and _PASSWORD create the owner without a browser", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-"));
  try {
    const server = await startServerProcess({
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "boot@example.test",
      GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: "bootstrap passphrase",
    });
    assert.doesNotMatch(server.output(), /\/setup\//);
    assert.doesNotMatch(server.output(), /bootstrap passphrase/);
    const session = await sessionOf(
      await post(server.baseUrl, "/v2/auth/login", {
        email: "boot@example.test",
        password: "bootstrap passphrase",
      }),
    );
    const orgs = await fetch(`${server.baseUrl}/v2/orgs`, { headers: { cookie: session.cookie } });
    assert.equal(((await orgs.json()) as { key: string }[])[0]?.key, "default");
    assert.equal(await server.stop("SIGTERM"), 0);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
