import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect, PUBLIC_URL } from "../helpers/app.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";

describeEachDialect("projects and environments", (env) => {
  test("create, get by UUID and by key, list, update and delete a project", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", "/v2/projects", {
      key: "billing",
      name: "Billing",
      initial_environments: [{ key: "dev", name: "Dev" }],
    });
    assert.equal(created.status, 200);
    assert.deepEqual(validatePermitResponse("post", "/v2/projects", 200, created.json), []);
    assert.equal(created.json.key, "billing");
    assert.equal(created.json.organization_id, acme.id);
    assert.equal("description" in created.json, false, "an unset description is left out");
    assert.match(created.json.created_at, /\+00:00$/);

    const byId = await call(acme.adminKey, "GET", `/v2/projects/${created.json.id}`);
    const byKey = await call(acme.adminKey, "GET", `/v2/projects/billing`);
    assert.deepEqual(byId.json, created.json);
    assert.deepEqual(byKey.json, created.json);
    assert.deepEqual(validatePermitResponse("get", "/v2/projects/{proj_id}", 200, byKey.json), []);

    const envs = await call(acme.adminKey, "GET", `/v2/projects/billing/envs`);
    assert.deepEqual(
      envs.json.map((e: { key: string }) => e.key),
      ["dev"],
    );

    const list = await call(acme.adminKey, "GET", "/v2/projects");
    assert.deepEqual(list.json.map((p: { key: string }) => p.key).sort(), ["billing", "default"]);
    const paged = await call(acme.adminKey, "GET", "/v2/projects?page=2&per_page=1");
    assert.equal(paged.json.length, 1);

    const patched = await call(acme.adminKey, "PATCH", `/v2/projects/billing`, {
      name: "Billing 2",
      description: "money",
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.json.name, "Billing 2");
    assert.equal(patched.json.description, "money");
    assert.equal(patched.json.key, "billing");

    assert.equal((await call(acme.adminKey, "DELETE", `/v2/projects/${created.json.id}`)).status, 204);
    assert.equal((await call(acme.adminKey, "GET", `/v2/projects/billing`)).status, 404);
    const envRows = await env()
      .store.db.selectFrom("environments")
      .select("id")
      .where("project_id", "=", created.json.id)
      .execute();
    assert.equal(envRows.length, 0, "deleting a project removes its environments");
  });

  test("project keys are unique per organization: 409 on a duplicate, fine in another organization", async () => {
    const { acme, globex, call } = env();
    assert.equal(
      (await call(acme.adminKey, "POST", "/v2/projects", { key: "shared", name: "A" })).status,
      200,
    );
    const dup = await call(acme.adminKey, "POST", "/v2/projects", { key: "shared", name: "B" });
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error_code, "DUPLICATE_ENTITY");
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects/shared")).json.name, "A");
    assert.equal(
      (await call(globex.adminKey, "POST", "/v2/projects", { key: "shared", name: "G" })).status,
      200,
    );
  });

  test("404 for unknown projects and environments, by UUID and by key", async () => {
    const { acme, call } = env();
    const missing = "00000000-0000-4000-8000-000000000000";
    for (const url of [
      `/v2/projects/${missing}`,
      `/v2/projects/nope`,
      `/v2/projects/nope/envs`,
      `/v2/projects/default/envs/nope`,
      `/v2/projects/default/envs/${missing}`,
    ]) {
      const res = await call(acme.adminKey, "GET", url);
      assert.equal(res.status, 404, url);
      assert.equal(res.json.error_code, "NOT_FOUND");
    }
    assert.equal((await call(acme.adminKey, "PATCH", `/v2/projects/nope`, { name: "x" })).status, 404);
    assert.equal((await call(acme.adminKey, "DELETE", `/v2/projects/default/envs/nope`)).status, 404);
  });

  test("an environment has the specification's fields and starts with exactly the default tenant", async () => {
    const { acme, call, store } = env();
    const created = await call(acme.adminKey, "POST", `/v2/projects/default/envs`, {
      key: "staging",
      name: "Staging",
    });
    assert.equal(created.status, 200);
    assert.deepEqual(validatePermitResponse("post", "/v2/projects/{proj_id}/envs", 200, created.json), []);
    assert.deepEqual(Object.keys(created.json).sort(), [
      "avp_policy_store_id",
      "created_at",
      "custom_branch_name",
      "description",
      "id",
      "jwks",
      "key",
      "name",
      "organization_id",
      "project_id",
      "settings",
      "updated_at",
    ]);
    assert.equal(created.json.description, "");
    assert.equal(created.json.avp_policy_store_id, "");
    assert.equal(created.json.custom_branch_name, "");
    assert.deepEqual(created.json.jwks, {});
    assert.deepEqual(created.json.settings, {});
    assert.equal(created.json.project_id, acme.projectId);
    const tenants = await store.db
      .selectFrom("tenants")
      .select("key")
      .where("environment_id", "=", created.json.id)
      .execute();
    assert.deepEqual(tenants, [{ key: "default" }]);
    assert.ok(
      Number(created.headers["x-gatehouse-revision"]) >= 1,
      "a write answers with the environment's revision",
    );

    const byKey = await call(acme.adminKey, "GET", `/v2/projects/default/envs/staging`);
    const byIds = await call(acme.adminKey, "GET", `/v2/projects/${acme.projectId}/envs/${created.json.id}`);
    assert.deepEqual(byKey.json, created.json);
    assert.deepEqual(byIds.json, created.json);

    const patched = await call(acme.adminKey, "PATCH", `/v2/projects/default/envs/staging`, {
      description: "pre-prod",
      settings: { a: 1 },
    });
    assert.equal(patched.json.description, "pre-prod");
    assert.deepEqual(patched.json.settings, { a: 1 });
    assert.equal(patched.json.name, "Staging");

    const dup = await call(acme.adminKey, "POST", `/v2/projects/default/envs`, {
      key: "staging",
      name: "Again",
    });
    assert.equal(dup.status, 409);
    assert.equal(dup.json.error_code, "DUPLICATE_ENTITY");

    assert.equal((await call(acme.adminKey, "DELETE", `/v2/projects/default/envs/staging`)).status, 204);
    assert.equal((await call(acme.adminKey, "GET", `/v2/projects/default/envs/staging`)).status, 404);
    const left = await store.db
      .selectFrom("tenants")
      .select("id")
      .where("environment_id", "=", created.json.id)
      .execute();
    assert.equal(left.length, 0, "deleting an environment removes what is in it");
  });

  test("organizations: active, get by id and key, update; other organizations do not exist for a key", async () => {
    const { acme, globex, call } = env();
    const active = await call(acme.adminKey, "GET", "/v2/orgs/active/org");
    assert.equal(active.status, 200);
    assert.equal(active.json.id, acme.id);
    assert.deepEqual(validatePermitResponse("get", "/v2/orgs/active/org", 200, active.json), []);
    assert.deepEqual(
      [active.json.region, active.json.api_url],
      ["us", PUBLIC_URL],
      "beyond Permit: where it lives",
    );
    assert.deepEqual((await call(acme.adminKey, "GET", `/v2/orgs/acme`)).json, active.json);
    const patched = await call(acme.adminKey, "PATCH", `/v2/orgs/${acme.id}`, { name: "Acme Corp" });
    assert.equal(patched.json.name, "Acme Corp");
    assert.deepEqual(validatePermitResponse("patch", "/v2/orgs/{org_id}", 200, patched.json), []);
    assert.equal((await call(acme.adminKey, "GET", `/v2/orgs/globex`)).status, 404);
    assert.equal((await call(globex.adminKey, "GET", `/v2/orgs/globex`)).json.name, "globex inc");
  });

  test("GET /v2/orgs lists the organizations the key can reach, in Permit's shape, paginated", async () => {
    const { acme, globex, call } = env();
    const envKey = (await call(acme.adminKey, "GET", `/v2/api-key/default/production`)).json.secret;
    for (const key of [acme.adminKey, envKey]) {
      const list = await call(key, "GET", "/v2/orgs");
      assert.equal(list.status, 200, list.body);
      assert.deepEqual(validatePermitResponse("get", "/v2/orgs", 200, list.json), []);
      assert.deepEqual(
        list.json.map((o: { id: string }) => o.id),
        [acme.id],
      );
      assert.deepEqual(list.json[0], (await call(key, "GET", "/v2/orgs/active/org")).json);
    }
    const ids = async (query: string) =>
      (await call(globex.adminKey, "GET", `/v2/orgs${query}`)).json.map((o: { id: string }) => o.id);
    assert.deepEqual(await ids("?search=GLOB"), [globex.id]);
    assert.deepEqual(await ids(`?search=${globex.id}`), [globex.id]);
    assert.deepEqual(await ids("?search=acme"), []);
    assert.deepEqual(await ids("?page=2"), []);
    assert.equal((await call(globex.adminKey, "GET", "/v2/orgs?per_page=101")).status, 422);
    assert.equal((await call(null, "GET", "/v2/orgs")).status, 401);
  });

  test("GET .../envs/{env}/stats: the environment with its counts, in Permit's EnvironmentStats shape", async () => {
    const { acme, globex, call } = env();
    const E = "/v2/projects/default/envs/production";
    const S = "/v2/schema/default/production";
    const F = "/v2/facts/default/production";
    const before = await call(acme.adminKey, "GET", `${E}/stats`);
    assert.equal(before.status, 200, before.body);
    assert.deepEqual(
      validatePermitResponse("get", "/v2/projects/{proj_id}/envs/{env_id}/stats", 200, before.json),
      [],
    );
    assert.equal(before.json.id, acme.envs.production);
    assert.deepEqual(before.json.pdp_configs, []);
    const base = before.json.stats;
    assert.equal(base.has_decision_logs, false);
    assert.ok(
      (
        await call(acme.adminKey, "POST", `${S}/resources`, {
          key: "doc",
          name: "Doc",
          actions: { read: {}, write: {} },
          roles: { editor: { name: "Editor", permissions: ["write"] } },
        })
      ).status < 300,
    );
    assert.ok(
      (
        await call(acme.adminKey, "POST", `${S}/roles`, {
          key: "reader",
          name: "Reader",
          permissions: ["doc:read", "doc:write"],
        })
      ).status < 300,
    );
    for (const key of ["u1", "u2", "u3"])
      assert.equal((await call(acme.adminKey, "POST", `${F}/users`, { key })).status, 201);
    assert.equal((await call(acme.adminKey, "POST", `${F}/tenants`, { key: "t9", name: "T9" })).status, 201);
    // Another organization's and another environment's writes are not counted.
    assert.equal((await call(globex.adminKey, "POST", `${F}/users`, { key: "g1" })).status, 201);
    assert.equal(
      (await call(acme.adminKey, "POST", "/v2/facts/default/development/users", { key: "d1" })).status,
      201,
    );
    const after = await call(acme.adminKey, "GET", `${E}/stats`);
    assert.equal(after.status, 200, after.body);
    assert.deepEqual(
      validatePermitResponse("get", "/v2/projects/{proj_id}/envs/{env_id}/stats", 200, after.json),
      [],
    );
    assert.deepEqual(after.json.stats, {
      ...base,
      roles: base.roles + 2,
      users: base.users + 3,
      policies: base.policies + 3,
      resources: base.resources + 1,
      tenants: base.tenants + 1,
    });
    assert.equal(
      (await call(globex.adminKey, "GET", `/v2/projects/default/envs/${acme.envs.production}/stats`)).status,
      404,
    );
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects/default/envs/nope/stats")).status, 404);
  });
});
