import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { freshStore, type TestStore } from "../helpers/stores.ts";

// A stand-in for web/dist: the serving rules, not the React build, are under test here.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-dashboard-"));
fs.mkdirSync(path.join(dir, "assets"));
fs.writeFileSync(path.join(dir, "index.html"), "<!doctype html><title>dashboard</title>");
fs.writeFileSync(path.join(dir, "assets", "index-abc123.js"), "console.log('dashboard')");

let store: TestStore;
let app: FastifyInstance;

before(async () => {
  store = await freshStore("sqlite");
  app = await buildApp({
    config: { ...loadConfig([], {}), publicUrl: "http://gatehouse.test" },
    store,
    box: createSecretBox("test-secret-key-that-is-long-enough-000"),
    dashboardDir: dir,
  });
  await app.ready();
});

after(async () => {
  await app.close();
  await store.close();
});

const html = { accept: "text/html,application/xhtml+xml" };

test("the dashboard's page at / and at its client routes, revalidated, with a content security policy", async () => {
  for (const url of ["/", "/setup/abc", "/invite/xyz", "/o/default/p/shop/e/dev/users?page=2"]) {
    const res = await app.inject({ url, headers: html });
    assert.equal(res.statusCode, 200, url);
    assert.match(res.headers["content-type"] as string, /^text\/html/);
    assert.equal(res.body, "<!doctype html><title>dashboard</title>");
    assert.equal(res.headers["cache-control"], "no-cache");
    assert.match(res.headers["content-security-policy"] as string, /default-src 'self'/);
  }
});

test("assets are cached for good; /v2, other methods and non-HTML requests keep the API's error bodies", async () => {
  const asset = await app.inject({ url: "/assets/index-abc123.js" });
  assert.equal(asset.statusCode, 200);
  assert.equal(asset.headers["cache-control"], "public, max-age=31536000, immutable");

  const api = await app.inject({ url: "/v2/no-such-route", headers: html });
  assert.equal(api.statusCode, 401);
  assert.equal(api.json().error_code, "UNAUTHORIZED");
  for (const [method, headers] of [
    ["GET", { accept: "application/json" }],
    ["POST", html],
  ] as const) {
    const res = await app.inject({ method, url: "/setup/abc", headers });
    assert.equal(res.statusCode, 404, `${method} ${JSON.stringify(headers)}`);
    assert.equal(res.json().error_code, "NOT_FOUND");
  }
  const missing = await app.inject({ url: "/assets/missing.js", headers: { accept: "*/*" } });
  assert.equal(missing.statusCode, 404);
});
