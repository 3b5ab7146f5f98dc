import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";
import { addMember, asMember, login } from "../helpers/members.ts";
import { startTestPdp } from "../helpers/pdp.ts";

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

  test("a key made with a key names it (created_by_key); one made in a session names the member, not a key", async () => {
    const { acme, store, app, call } = env();
    const made = await call(acme.adminKey, "POST", "/v2/api-key", {
      object_type: "org",
      name: "made by key",
    });
    assert.equal(made.status, 200);
    const admin = await store.db
      .selectFrom("api_keys")
      .select(["id", "name"])
      .where("id", "=", acme.adminKeyId)
      .executeTakeFirstOrThrow();
    const creator = { id: admin.id, ...(admin.name !== null && { name: admin.name }) };
    assert.deepEqual(made.json.created_by_key, creator);
    assert.equal(made.json.created_by_member, undefined);
    assert.deepEqual(
      (await call(acme.adminKey, "GET", `/v2/api-key/${made.json.id}`)).json.created_by_key,
      creator,
    );
    const listed = await call(acme.adminKey, "GET", "/v2/api-key?object_type=org&per_page=100");
    assert.deepEqual(
      listed.json.data.find((k: { id: string }) => k.id === made.json.id).created_by_key,
      creator,
    );
    assert.deepEqual(validatePermitResponse("get", "/v2/api-key", 200, listed.json), []);

    await addMember(store, "keymaker@example.test", [{ organizationId: acme.id }]);
    const session = await login(app, "keymaker@example.test");
    const bySession = await asMember(app, session, "POST", "/v2/api-key", {
      object_type: "org",
      name: "by member",
    });
    assert.equal(bySession.status, 200);
    assert.equal(bySession.json.created_by_member.email, "keymaker@example.test");
    assert.equal(bySession.json.created_by_key, undefined);
  });

  test("last_used_at: set by API calls and PDP checks, written off the request in a batch, at most once a minute per key", async () => {
    const { acme, globex, store, app, call } = env();
    const made = await call(acme.adminKey, "POST", "/v2/api-key", { object_type: "org", name: "used" });
    assert.equal(made.json.last_used_at, undefined, "a new key was never used");
    const lastUsed = async (id: string) =>
      (
        await store.db
          .selectFrom("api_keys")
          .select("last_used_at")
          .where("id", "=", id)
          .executeTakeFirstOrThrow()
      ).last_used_at;

    const started = Date.now() - 1;
    const since = (at: string | null) => at !== null && Date.parse(at) >= started;
    const unused = await call(globex.adminKey, "POST", "/v2/api-key", { object_type: "org", name: "unused" });
    assert.equal((await call(made.json.secret, "GET", "/v2/projects")).status, 200);
    assert.equal(await lastUsed(made.json.id), null, "not written on the request's path");
    await app.keyUse.flush();
    const first = await lastUsed(made.json.id);
    assert.ok(since(first), `recorded after the batch: ${first}`);
    const read = await call(acme.adminKey, "GET", `/v2/api-key/${made.json.id}`);
    assert.equal(read.json.last_used_at, first);
    assert.deepEqual(validatePermitResponse("get", "/v2/api-key/{api_key_id}", 200, read.json), []);

    // Within the minute, more calls write nothing more.
    await store.db
      .updateTable("api_keys")
      .set({ last_used_at: "2000-01-01T00:00:00.000Z" })
      .where("id", "=", made.json.id)
      .execute();
    for (let i = 0; i < 5; i++) await call(made.json.secret, "GET", "/v2/projects");
    await app.keyUse.flush();
    assert.equal(await lastUsed(made.json.id), "2000-01-01T00:00:00.000Z");
    assert.equal(await lastUsed(unused.json.id), null, "another organization's unused key is left alone");

    // A check through the embedded PDP with the environment's key records that key.
    const envKey = await call(acme.adminKey, "GET", `/v2/api-key/${acme.projectId}/${acme.envs.development}`);
    assert.equal(envKey.status, 200);
    const pdp = await startTestPdp(env());
    try {
      await app.keyUse.flush();
      await store.db
        .updateTable("api_keys")
        .set({ last_used_at: null })
        .where("id", "=", envKey.json.id)
        .execute();
      const check = await pdp.call(envKey.json.secret, "/allowed", {
        user: { key: "nobody" },
        action: "read",
        resource: { type: "document" },
      });
      assert.equal(check.status, 200);
      await app.keyUse.flush();
      const used = await lastUsed(envKey.json.id);
      assert.ok(since(used), `the PDP's check recorded the key: ${used}`);
    } finally {
      await pdp.close();
    }
  });
});
