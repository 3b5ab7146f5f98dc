import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startServerProcess } from "../helpers/process.ts";

test("the real server: first start prints a key that works over HTTP, data survives a restart, SIGTERM exits cleanly", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-"));
  try {
    const first = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir });
    const key = /\b(gh_us_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/.exec(first.output())?.[1];
    assert.ok(key, `the first start prints the generated organization key:\n${first.output()}`);
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };

    const scope = await fetch(`${first.baseUrl}/v2/api-key/scope`, { headers: auth });
    assert.equal(scope.status, 200);
    const created = await fetch(`${first.baseUrl}/v2/projects`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ key: "e2e", name: "End to end" }),
    });
    assert.equal(created.status, 200);
    const unauthorized = await fetch(`${first.baseUrl}/v2/projects`);
    assert.equal(unauthorized.status, 401);
    assert.equal((await unauthorized.json()).error_code, "UNAUTHORIZED");
    const openapi = await fetch(`${first.baseUrl}/openapi.json`);
    assert.equal((await openapi.json()).openapi, "3.1.0");
    assert.equal((await fetch(`${first.baseUrl}/docs`)).status, 200);

    assert.equal(await first.stop("SIGTERM"), 0, first.output());

    const second = await startServerProcess({ GATEHOUSE_DATA_DIR: dataDir });
    assert.doesNotMatch(second.output(), /gh_us_[A-Za-z0-9_-]{43}/, "a restart prints no new key");
    const again = await fetch(`${second.baseUrl}/v2/projects/e2e`, { headers: auth });
    assert.equal(again.status, 200);
    assert.equal((await again.json()).name, "End to end");
    assert.equal(await second.stop("SIGTERM"), 0);
    assert.doesNotMatch(
      first.output() + second.output(),
      new RegExp(`${key}[\\s\\S]*${key}`),
      "the key is printed once",
    );
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test("GATEHOUSE_BOOTSTRAP_API_KEY becomes the first organization's admin key; a bad setting is a clear error", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-"));
  const bootstrap = "bootstrap-key-for-the-e2e-test-0123456789";
  try {
    const server = await startServerProcess({
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: bootstrap,
    });
    assert.doesNotMatch(server.output(), new RegExp(bootstrap), "the bootstrap key is never printed");
    const res = await fetch(`${server.baseUrl}/v2/orgs/active/org`, {
      headers: { authorization: `Bearer ${bootstrap}` },
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).key, "default");
    assert.equal(await server.stop(), 0);
    await assert.rejects(
      startServerProcess({ GATEHOUSE_DATA_DIR: dataDir }, ["--api-port", "not-a-port"]),
      /GATEHOUSE_API_PORT \(--api-port\) must be a port number/,
    );
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
