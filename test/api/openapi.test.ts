import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { generateOpenApi, OPENAPI_FILE } from "../../scripts/openapi.ts";
import { migrateToLatest, openStore } from "../../src/db/store.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createEmbeddedPdp } from "../../src/pdp/embedded.ts";
import { databasePdpStorage } from "../../src/domain/pdp-storage.ts";
import { buildOpaApp, buildPdpApp } from "../../src/pdp/http/server.ts";
import { buildTestApp, PUBLIC_URL } from "../helpers/app.ts";
import { REPO_ROOT } from "../helpers/process.ts";

/**
 * "METHOD /path" of every route in Fastify's route tree (`printRoutes()`: one node per line,
 * four columns of indentation per level, the node's methods in parentheses). HEAD routes are Fastify's own.
 */
function registeredRoutes(tree: string): string[] {
  const routes: string[] = [];
  const path: string[] = [];
  for (const line of tree.split("\n")) {
    if (line.trim() === "") continue;
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    assert.ok(m, `a line of the route tree this test cannot read: ${line}`);
    path.length = (m[1] as string).length / 4;
    path.push(m[2] as string);
    for (const method of (m[3] ?? "").split(", ").filter(Boolean))
      if (method !== "HEAD") routes.push(`${method} ${path.join("")}`);
  }
  return routes;
}

/** Parameter names aside (Fastify shows `:a|:b` where two routes name one segment differently). */
const shape = (route: string) => route.replace(/:[A-Za-z_|:]+/g, "{}").replace(/\{[A-Za-z_]+\}/g, "{}");

test("the checked-in OpenAPI document matches the route schemas (run `npm run openapi:write` after changing routes)", async () => {
  const generated = await generateOpenApi();
  const checkedIn = fs.readFileSync(OPENAPI_FILE, "utf8");
  assert.equal(checkedIn, generated);
});

test("the OpenAPI document is 3.1, documents errors and covers every /v2 route", async () => {
  const doc = JSON.parse(await generateOpenApi());
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.components.schemas.ErrorDetails, "the error body is a named component");
  const documented = Object.entries(doc.paths as Record<string, object>).flatMap(([p, ops]) =>
    Object.keys(ops).map((method) => shape(`${method.toUpperCase()} ${p}`)),
  );
  const store = openStore({});
  await migrateToLatest(store);
  const app = await buildTestApp(store, createSecretBox("openapi-test-only-key-000000000000000"));
  try {
    const registered = registeredRoutes(app.printRoutes())
      .filter((r) => r.split(" ")[1]?.startsWith("/v2"))
      .map(shape);
    assert.ok(registered.length > 100, `the route tree was read: ${registered.length} routes`);
    const missing = (from: string[], to: string[]) =>
      [...new Set(from)].filter((r) => !to.includes(r)).sort();
    assert.deepEqual(missing(registered, documented), [], "registered /v2 routes the document lacks");
    assert.deepEqual(missing(documented, registered), [], "documented routes no /v2 route serves");
  } finally {
    await app.close();
    await store.close();
  }
  for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, { responses: object }>>)) {
    if (!p.startsWith("/v2")) continue;
    for (const [method, op] of Object.entries(ops)) {
      assert.ok(Object.keys(op.responses).includes("401"), `${method} ${p} documents 401`);
    }
  }
});

test("every route of the PDP and its OPA port is in docs/pdp.md, and every decision route listed there is served", async () => {
  const store = openStore({});
  await migrateToLatest(store);
  const app = await buildTestApp(store, createSecretBox("openapi-test-only-key-000000000000000"));
  const pdp = createEmbeddedPdp({
    storage: databasePdpStorage(store),
    notifier: app.notifier,
    publicUrl: PUBLIC_URL,
    controlPlane: () => app,
  });
  const apps = [await buildPdpApp(pdp), await buildOpaApp(pdp)];
  try {
    // `{x}` and `:x` are one parameter; `/...` and `/*` the rest of the path.
    const pathShape = (p: string) => shape(p.replace(/^\{pdp\}/, "")).replace(/\/\.\.\.$/, "/*");
    const registered = apps.flatMap((a) => registeredRoutes(a.printRoutes())).map(shape);
    const doc = fs.readFileSync(path.join(REPO_ROOT, "docs/pdp.md"), "utf8");
    const mentioned = new Set(
      [...doc.matchAll(/`(?:[A-Z]+ )?(\{pdp\}\/[^`\s]*|\/[^`\s]*)`/g)].map((m) => pathShape(m[1] as string)),
    );
    const undocumented = [...new Set(registered.map((r) => r.split(" ")[1] as string))].filter(
      (p) => !mentioned.has(p),
    );
    assert.deepEqual(undocumented, [], "PDP routes docs/pdp.md does not name");
    // The decision table: `POST /a`, `/b` in its first column.
    const listed = doc
      .split("\n")
      .filter((line) => /^\| `POST \//.test(line))
      .flatMap((line) => [...(line.split("|")[1] ?? "").matchAll(/`(?:POST )?(\/[^`\s]*)`/g)])
      .map((m) => shape(`POST ${m[1] as string}`));
    assert.ok(listed.length >= 10, `the decision table was read: ${listed.length} routes`);
    assert.deepEqual(
      listed.filter((r) => !registered.includes(r)),
      [],
      "decision routes docs/pdp.md lists that no PDP port serves",
    );
  } finally {
    for (const a of apps) await a.close();
    await pdp.close();
    await app.close();
    await store.close();
  }
});
