import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";

describeEachDialect("API keys", (env) => {
  test("create keys of each scope; the secret is shown on creation and to organization admins", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", "/v2/api-key", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.development,
      access_level: "read",
      name: "ci reader",
    });
    assert.equal(created.status, 200);
    assert.deepEqual(validatePermitResponse("post", "/v2/api-key", 200, created.json), []);
    assert.match(created.json.secret, /^gh_us_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.json.access_level, "read");
    assert.equal(created.json.env.key, "development");
    assert.equal(created.json.project.key, "default");

    const got = await call(acme.adminKey, "GET", `/v2/api-key/${created.json.id}`);
    assert.equal(got.json.secret, created.json.secret);
    assert.deepEqual(validatePermitResponse("get", "/v2/api-key/{api_key_id}", 200, got.json), []);

    const list = await call(acme.adminKey, "GET", `/v2/api-key?object_type=env&proj_id=default`);
    assert.equal(list.status, 200);
    assert.deepEqual(validatePermitResponse("get", "/v2/api-key", 200, list.json), []);
    assert.ok(
      list.json.data.every(
        (k: { object_type: string; secret?: string }) => k.object_type === "env" && !k.secret,
      ),
    );
    assert.ok(list.json.data.some((k: { id: string }) => k.id === created.json.id));
    assert.equal(list.json.total_count, list.json.data.length);

    const stored = await env().store.db.selectFrom("api_keys").selectAll().execute();
    assert.ok(
      stored.every((row) => !JSON.stringify(row).includes(created.json.secret)),
      "no secret is stored in plain text",
    );
  });

  test("the environment's own key, by UUIDs and by keys, works for that environment only", async () => {
    const { acme, call } = env();
    const key = await call(acme.adminKey, "GET", `/v2/api-key/default/production`);
    assert.equal(key.status, 200);
    assert.deepEqual(validatePermitResponse("get", "/v2/api-key/{proj_id}/{env_id}", 200, key.json), []);
    assert.equal(key.json.environment_id, acme.envs.production);
    const again = await call(acme.adminKey, "GET", `/v2/api-key/${acme.projectId}/${acme.envs.production}`);
    assert.equal(again.json.id, key.json.id);
    const scope = await call(key.json.secret, "GET", "/v2/api-key/scope");
    assert.equal(scope.json.environment_id, acme.envs.production);
    assert.equal((await call(key.json.secret, "GET", `/v2/projects/default/envs/development`)).status, 403);
  });

  test("invalid key requests are rejected and create nothing", async () => {
    const { acme, globex, call, store } = env();
    const count = async () => (await store.db.selectFrom("api_keys").select("id").execute()).length;
    const before = await count();
    const cases: [unknown, number][] = [
      [{ object_type: "env", project_id: acme.projectId }, 422],
      [{ object_type: "project" }, 422],
      [{ object_type: "org", project_id: acme.projectId }, 422],
      [{ object_type: "galaxy" }, 422],
      [{ object_type: "env", project_id: "nope", environment_id: "production" }, 404],
      [{ object_type: "env", project_id: "default", environment_id: "nope" }, 404],
      [{ object_type: "project", project_id: globex.projectId }, 404],
      [{ organization_id: globex.id, object_type: "org" }, 403],
    ];
    for (const [body, status] of cases) {
      const res = await call(acme.adminKey, "POST", "/v2/api-key", body);
      assert.equal(res.status, status, JSON.stringify(body));
    }
    assert.equal(await count(), before);
  });

  test("the organization's last admin key cannot be deleted", async () => {
    const { globex, call } = env();
    const res = await call(globex.adminKey, "DELETE", `/v2/api-key/${globex.adminKeyId}`);
    assert.equal(res.status, 409);
    assert.equal((await call(globex.adminKey, "GET", "/v2/api-key/scope")).status, 200);
  });

  test("a new organization comes with a default project and its own admin key", async () => {
    const { acme, call } = env();
    const res = await call(acme.adminKey, "POST", "/v2/orgs", { key: "initech", name: "Initech" });
    assert.equal(res.status, 200);
    assert.match(res.json.api_key_secret, /^gh_/);
    const projects = await call(res.json.api_key_secret, "GET", "/v2/projects");
    assert.deepEqual(
      projects.json.map((p: { key: string }) => p.key),
      ["default"],
    );
    const envs = await call(res.json.api_key_secret, "GET", "/v2/projects/default/envs");
    assert.deepEqual(envs.json.map((e: { key: string }) => e.key).sort(), ["development", "production"]);
    assert.equal(
      (await call(acme.adminKey, "POST", "/v2/orgs", { key: "initech", name: "Again" })).status,
      409,
    );
    assert.equal((await call(res.json.api_key_secret, "GET", `/v2/orgs/acme`)).status, 404);
  });
});
