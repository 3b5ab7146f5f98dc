import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { freshStore, type TestStore } from "../helpers/stores.ts";
import { REPO_ROOT } from "../helpers/process.ts";
import { ensureDashboardBuilt } from "../helpers/browser.ts";

// The real dashboard build: its icon files come from web/public, the page names them.
let store: TestStore;
let app: FastifyInstance;

before(async () => {
  ensureDashboardBuilt();
  store = await freshStore("sqlite");
  app = await buildApp({
    config: { ...loadConfig([], {}), publicUrl: "http://gatehouse.test" },
    store,
    box: createSecretBox("test-secret-key-that-is-long-enough-000"),
    dashboardDir: path.join(REPO_ROOT, "web", "dist"),
  });
  await app.ready();
});

after(async () => {
  await app.close();
  await store.close();
});

test("the dashboard has an icon: named by its page, and at /favicon.ico for clients that ask there", async () => {
  const page = await app.inject({ url: "/", headers: { accept: "text/html" } });
  assert.equal(page.statusCode, 200);
  const icons = [...page.body.matchAll(/<link rel="icon" href="([^"]+)"/g)].map((m) => m[1] as string);
  assert.ok(icons.length > 0, "the page links an icon");
  for (const url of new Set([...icons, "/favicon.ico"])) {
    const res = await app.inject({ url, headers: { accept: "image/avif,image/webp,image/*,*/*;q=0.8" } });
    assert.equal(res.statusCode, 200, url);
    assert.match(res.headers["content-type"] as string, /^image\//, url);
    assert.ok(res.rawPayload.length > 0, url);
  }
});
