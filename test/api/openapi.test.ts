import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { generateOpenApi, OPENAPI_FILE } from "../../scripts/openapi.ts";

test("the checked-in OpenAPI document matches the route schemas (run `npm run openapi:write` after changing routes)", async () => {
  const generated = await generateOpenApi();
  const checkedIn = fs.readFileSync(OPENAPI_FILE, "utf8");
  assert.equal(checkedIn, generated);
});

test("the OpenAPI document is 3.1, documents errors and covers every /v2 route", async () => {
  const doc = JSON.parse(await generateOpenApi());
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.components.schemas.ErrorDetails, "the error body is a named component");
  const paths = Object.keys(doc.paths);
  for (const p of [
    "/v2/projects",
    "/v2/projects/{proj_id}/envs/{env_id}",
    "/v2/api-key/scope",
    "/v2/orgs/active/org",
  ]) {
    assert.ok(paths.includes(p), p);
  }
  for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, { responses: object }>>)) {
    if (!p.startsWith("/v2")) continue;
    for (const [method, op] of Object.entries(ops)) {
      assert.ok(Object.keys(op.responses).includes("401"), `${method} ${p} documents 401`);
    }
  }
});
