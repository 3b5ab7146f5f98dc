import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort, runGatehouse, startServerProcess } from "../helpers/process.ts";
import { loadConfig } from "../../src/config.ts";
import { describeDatabase } from "../../src/server.ts";

const KEY_RE = /\b(gh_us_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/;

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-first-"));

/** A port held by another listener for the length of `run`. */
async function withTakenPort<T>(run: (port: number) => Promise<T>): Promise<T> {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  const port = (blocker.address() as net.AddressInfo).port;
  try {
    return await run(port);
  } finally {
    blocker.close();
  }
}

test("a taken port (API or PDP) ends the start before the first organization is made: no key is shown, the next start shows it", async () => {
  const dataDir = tempDir();
  try {
    for (const which of ["GATEHOUSE_API_PORT", "GATEHOUSE_PDP_PORT"] as const) {
      const failed = await withTakenPort(async (taken) =>
        runGatehouse(["serve"], {
          GATEHOUSE_DATA_DIR: dataDir,
          GATEHOUSE_API_PORT: String(await freePort()),
          GATEHOUSE_PDP_PORT: String(await freePort()),
          GATEHOUSE_OPA_PORT: "0",
          [which]: String(taken),
        }),
      );
      const output = failed.stdout + failed.stderr;
      assert.equal(failed.code, 1, output);
      assert.match(failed.stderr, /cannot listen on 127\.0\.0\.1:\d+: the port is in use \(EADDRINUSE\)/);
      assert.doesNotMatch(output, KEY_RE, `${which} taken: no key is printed`);
      assert.doesNotMatch(output, /Created the first organization/);
    }
    const server = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir }, [], { pdp: true });
    try {
      const key = KEY_RE.exec(server.output())?.[1];
      assert.ok(key, `the first start that runs prints the key:\n${server.output()}`);
      const scope = await fetch(`${server.baseUrl}/v2/api-key/scope`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(scope.status, 200);
      // What is running, once: the API, the docs, the PDP, the database and the data folder.
      const out = server.output();
      assert.match(out, /Gatehouse \S+ is running/);
      assert.match(out, new RegExp(`API +${server.baseUrl}/v2`));
      assert.match(out, new RegExp(`API docs +${server.baseUrl}/docs`));
      assert.match(out, new RegExp(`PDP +http://127\\.0\\.0\\.1:${server.pdpPort}`));
      assert.match(out, /database +SQLite .*gatehouse\.db/);
      assert.ok(out.includes(`data       ${dataDir}`), out);
      assert.ok(out.indexOf(key) < out.indexOf("is running"), "the key comes before the block");
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("gatehouse keys create|list work on the database directly; the key made works over HTTP", async () => {
  const dataDir = tempDir();
  const env = { GATEHOUSE_DATA_DIR: dataDir };
  try {
    const empty = await runGatehouse(["keys", "create", "--scope", "org"], env);
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /there is no organization yet/);

    const server = await startServerProcess(env);
    let orgKey = "";
    let envKey = "";
    try {
      const created = await runGatehouse(
        ["keys", "create", "--org", "default", "--scope", "environment", "--project", "default"],
        env,
      );
      assert.equal(created.code, 2, "an environment key needs --env");
      assert.match(created.stderr, /--scope environment needs --env; see `gatehouse help`/);

      const org = await runGatehouse(
        ["keys", "create", "--org", "default", "--scope", "org", "--name", "rescue"],
        env,
      );
      assert.equal(org.code, 0, org.stderr);
      orgKey = KEY_RE.exec(org.stdout)?.[1] ?? "";
      assert.ok(orgKey, org.stdout);
      const envKeyRun = await runGatehouse(
        [
          "keys",
          "create",
          "--org",
          "default",
          "--scope",
          "environment",
          "--project",
          "default",
          "--env",
          "production",
          "--access",
          "read",
        ],
        env,
      );
      assert.equal(envKeyRun.code, 0, envKeyRun.stderr);
      envKey = KEY_RE.exec(envKeyRun.stdout)?.[1] ?? "";

      // The running server accepts both at once: the admin key reaches the organization, the read key only reads.
      const headers = (key: string) => ({
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      });
      const scope = await (
        await fetch(`${server.baseUrl}/v2/api-key/scope`, { headers: headers(orgKey) })
      ).json();
      assert.ok(scope.organization_id && !scope.project_id, JSON.stringify(scope));
      const projects = await fetch(`${server.baseUrl}/v2/projects`, {
        method: "POST",
        headers: headers(orgKey),
        body: JSON.stringify({ key: "made-with-rescue-key", name: "x" }),
      });
      assert.equal(projects.status, 200);
      const readOnly = await fetch(`${server.baseUrl}/v2/facts/default/production/users`, {
        method: "POST",
        headers: headers(envKey),
        body: JSON.stringify({ key: "u1" }),
      });
      assert.equal(readOnly.status, 403);
      const users = await fetch(`${server.baseUrl}/v2/facts/default/production/users`, {
        headers: headers(envKey),
      });
      assert.equal(users.status, 200);
    } finally {
      await server.stop();
    }

    const list = await runGatehouse(["keys", "list"], env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /default +organization +admin +gh_\S+\.\.\. .* rescue/);
    assert.match(list.stdout, /default +environment default\/production +read /);
    assert.ok(!list.stdout.includes(orgKey) && !list.stdout.includes(envKey), "no secret is listed");
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("an unreachable database is one clear line within seconds; an unknown flag points to gatehouse help", async () => {
  const port = await freePort();
  const unreachable = await runGatehouse(["serve"], {
    DATABASE_URL: `postgres://gatehouse:very-secret@127.0.0.1:${port}/gatehouse`,
  });
  assert.equal(unreachable.code, 1);
  assert.equal(
    unreachable.stderr.trim(),
    `gatehouse: cannot reach the database at 127.0.0.1:${port} (ECONNREFUSED)`,
  );
  assert.ok(unreachable.ms < 15_000, `it fails within seconds (${unreachable.ms} ms)`);

  const unknown = await runGatehouse(["serve", "--no-such-flag"]);
  assert.equal(unknown.code, 2);
  assert.equal(unknown.stderr.trim(), "gatehouse: Unknown option '--no-such-flag'; see `gatehouse help`");
});

test("the database in the running block has no password", () => {
  const config = loadConfig([], { DATABASE_URL: "postgres://app:hunter2-secret@db.internal:6543/gatehouse" });
  assert.equal(describeDatabase(config), "PostgreSQL postgres://app@db.internal:6543/gatehouse");
});

test("a first start with a bad bootstrap owner creates nothing and says why; a misspelled setting is named", async () => {
  const dataDir = tempDir();
  try {
    const owner = { GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: "a long bootstrap passphrase" };
    for (const [env, error] of [
      [
        { ...owner, GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "notanemail" },
        /GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL must be an e-mail address/,
      ],
      [
        {
          GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "owner@example.test",
          GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: "short",
        },
        /GATEHOUSE_BOOTSTRAP_ADMIN_PASSWORD: a password needs at least 12 characters/,
      ],
    ] as const) {
      const failed = await runGatehouse(["serve"], {
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_API_PORT: String(await freePort()),
        GATEHOUSE_PDP_PORT: "0",
        GATEHOUSE_APIPORT: "9000",
        ...env,
      });
      const output = failed.stdout + failed.stderr;
      assert.equal(failed.code, 2, output);
      assert.match(failed.stderr, error);
      assert.match(
        failed.stderr,
        /warning: GATEHOUSE_APIPORT is not a Gatehouse setting and is ignored; did you mean GATEHOUSE_API_PORT\?/,
      );
      assert.doesNotMatch(output, KEY_RE);
      assert.doesNotMatch(output, /Created the/);
    }
    // Nothing was made: the next start is still the first.
    const server = await startServerProcess({
      GATEHOUSE_DATA_DIR: dataDir,
      ...owner,
      GATEHOUSE_BOOTSTRAP_ADMIN_EMAIL: "owner@example.test",
    });
    try {
      assert.match(server.output(), /Created the first organization/);
      assert.match(server.output(), /Created the owner owner@example\.test/);
      assert.ok(KEY_RE.test(server.output()));
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("a running server records its keys' last use: an API call and a check on the embedded PDP", async () => {
  const dataDir = tempDir();
  const server = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir }, [], { pdp: true });
  try {
    const key = KEY_RE.exec(server.output())?.[1] as string;
    const api = async (url: string) => {
      const res = await fetch(`${server.baseUrl}${url}`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 200, url);
      return res.json() as Promise<{ id: string; secret: string; last_used_at?: string }>;
    };
    const envKey = await api("/v2/api-key/default/production");
    const check = await fetch(`http://127.0.0.1:${server.pdpPort}/allowed`, {
      method: "POST",
      headers: { authorization: `Bearer ${envKey.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ user: { key: "nobody" }, action: "read", resource: { type: "document" } }),
    });
    assert.equal(check.status, 200);
    const { data } = (await api("/v2/api-key?object_type=org")) as unknown as { data: { id: string }[] };
    const adminId = data[0]?.id as string;
    // Written in batches every few seconds, not on the request's path.
    let used: (string | undefined)[] = [];
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      used = [
        (await api(`/v2/api-key/${adminId}`)).last_used_at,
        (await api(`/v2/api-key/${envKey.id}`)).last_used_at,
      ];
      if (used.every((at) => at !== undefined)) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.ok(
      used.every((at) => at !== undefined && Date.now() - Date.parse(at) < 60_000),
      JSON.stringify(used),
    );
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
