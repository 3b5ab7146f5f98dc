import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";

describeEachDialect("authentication and scopes", (env) => {
  const keys: Record<string, string> = {};

  before(async () => {
    const { acme, call } = env();
    const other = await call(acme.adminKey, "POST", "/v2/projects", { key: "other", name: "Other" });
    assert.equal(other.status, 200);
    const make = async (name: string, body: Record<string, unknown>) => {
      const res = await call(acme.adminKey, "POST", "/v2/api-key", { name, ...body });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      keys[name] = res.json.secret;
    };
    await make("project", { object_type: "project", project_id: acme.projectId });
    await make("env", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.production,
    });
    await make("envByKey", { object_type: "env", project_id: "default", environment_id: "development" });
    await make("readEnv", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.production,
      access_level: "read",
    });
    await make("readOrg", { object_type: "org", access_level: "read" });
  });

  test("scope endpoint returns ids for org, project and environment keys", async () => {
    const { acme, call } = env();
    assert.deepEqual((await call(acme.adminKey, "GET", "/v2/api-key/scope")).json, {
      organization_id: acme.id,
    });
    assert.deepEqual((await call(keys["project"]!, "GET", "/v2/api-key/scope")).json, {
      organization_id: acme.id,
      project_id: acme.projectId,
    });
    assert.deepEqual((await call(keys["env"]!, "GET", "/v2/api-key/scope")).json, {
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: acme.envs.production,
    });
    assert.equal(
      (await call(keys["envByKey"]!, "GET", "/v2/api-key/scope")).json.environment_id,
      acme.envs.development,
    );
  });

  test("401 for a missing header, a malformed header and an unknown key, with the error body", async () => {
    const { app } = env();
    const cases: Record<string, string>[] = [
      {},
      { authorization: "Token abc" },
      { authorization: "Bearer" },
      { authorization: "Bearer gh_doesnotexist" },
      { authorization: "bearer " + "x".repeat(40) },
    ];
    for (const headers of cases) {
      const res = await app.inject({ method: "GET", url: "/v2/projects", headers });
      assert.equal(res.statusCode, 401, JSON.stringify(headers));
      const body = res.json();
      assert.equal(body.error_code, "UNAUTHORIZED");
      assert.ok(body.id && body.title && body.message && body.support_link);
    }
  });

  test("a revoked key and a rotated secret stop working at once", async () => {
    const { acme, call } = env();
    const created = (await call(acme.adminKey, "POST", "/v2/api-key", { object_type: "org", name: "temp" }))
      .json;
    assert.equal((await call(created.secret, "GET", "/v2/projects")).status, 200);
    const rotated = await call(acme.adminKey, "POST", `/v2/api-key/${created.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.json.secret, created.secret);
    assert.equal((await call(created.secret, "GET", "/v2/projects")).status, 401);
    assert.equal((await call(rotated.json.secret, "GET", "/v2/projects")).status, 200);
    assert.equal((await call(acme.adminKey, "DELETE", `/v2/api-key/${created.id}`)).status, 204);
    assert.equal((await call(rotated.json.secret, "GET", "/v2/projects")).status, 401);
  });

  // Every route × every wrong key is test/api/wrong-credentials.test.ts; these are what it does not try: paths that
  // name a project or environment by key, and a narrower key on another organization's objects (403, not 404).
  test("403 for paths named by key and for another organization's objects under a narrower key", async () => {
    const { acme, globex, call } = env();
    const cases: [string, "GET" | "PATCH", string, unknown?][] = [
      ["env", "GET", `/v2/projects/default/envs/development`],
      ["env", "GET", `/v2/projects/other`],
      ["env", "GET", `/v2/projects/other/envs`],
      ["env", "GET", `/v2/projects/${globex.projectId}`],
      ["env", "GET", `/v2/projects/${globex.projectId}/envs/${globex.envs.production}`],
      ["project", "GET", `/v2/projects/other`],
      ["project", "PATCH", `/v2/projects/other`, { name: "x" }],
      ["project", "GET", `/v2/projects/other/envs`],
      ["project", "GET", `/v2/projects/${globex.projectId}`],
    ];
    for (const [who, method, url, body] of cases) {
      const res = await call(keys[who]!, method, url, body);
      assert.equal(res.status, 403, `${who} ${method} ${url} -> ${res.status} ${res.body}`);
      assert.equal(res.json.error_code, "FORBIDDEN_ACCESS");
    }
    // ... and nothing changed: the other project still has its name.
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects/other")).json.name, "Other");
  });

  test("read keys cannot write the decision log; the environment's own key can", async () => {
    const { acme, call } = env();
    const url = `/v2/pdps/${acme.projectId}/${acme.envs.production}/decision_logs`;
    const entry = (user: string) => ({
      id: crypto.randomUUID(),
      timestamp: new Date().toISOString(),
      pdp_id: "forger",
      query: "check",
      user_key: user,
      action: "read",
      resource_type: "document",
      resource_key: null,
      tenant: "default",
      decision: true,
      reason: "forged",
      input: null,
      result: null,
      revision: 0,
      latency_us: 1,
    });
    for (const who of ["readEnv", "readOrg"]) {
      const res = await call(keys[who]!, "POST", url, [entry(`forged-by-${who}`)]);
      assert.equal(res.status, 403, `${who} -> ${res.status} ${res.body}`);
      assert.equal(res.json.error_code, "FORBIDDEN_ACCESS");
    }
    const own = (await call(acme.adminKey, "GET", `/v2/api-key/${acme.projectId}/${acme.envs.production}`))
      .json.secret;
    for (const key of [own, keys["env"]!]) {
      const res = await call(key, "POST", url, [entry("real")]);
      assert.equal(res.status, 200, res.body);
      assert.equal(res.json.accepted, 1);
    }
    const logs = await call(
      acme.adminKey,
      "GET",
      `/v2/pdps/${acme.projectId}/${acme.envs.production}/audit_logs`,
    );
    assert.equal(logs.status, 200);
    assert.deepEqual(
      logs.json.data.map((e: { user_key: string }) => e.user_key),
      ["real", "real"],
    );
  });

  test("a standalone PDP names itself once per batch; entries name no PDP and no time, or every entry does", async () => {
    const { acme, call } = env();
    const url = `/v2/pdps/${acme.projectId}/${acme.envs.production}/decision_logs`;
    const logs = `/v2/pdps/${acme.projectId}/${acme.envs.production}/audit_logs`;
    const ms = Date.now() - 5000;
    const hex = ms.toString(16).padStart(12, "0");
    const id = `${hex.slice(0, 8)}-${hex.slice(8)}-7abc-8def-000000000042`;
    const entry = {
      id,
      query: "check",
      user_key: "batch-user",
      action: "read",
      decision: false,
      revision: 3,
      latency_us: 9,
    };
    const before = (await call(acme.adminKey, "GET", logs)).json.total_count;
    const unnamed = await call(acme.adminKey, "POST", url, [entry]);
    assert.equal(unnamed.status, 422, unnamed.body);
    assert.equal(unnamed.json.error_code, "INVALID_INPUT");
    assert.equal((await call(acme.adminKey, "GET", logs)).json.total_count, before, "nothing stored");

    const res = await call(acme.adminKey, "POST", `${url}?pdp_id=pdp-batch`, [entry]);
    assert.equal(res.status, 200, res.body);
    const read = (await call(acme.adminKey, "GET", `${logs}/${id}`)).json;
    assert.equal(read.pdp_config_id, "pdp-batch");
    assert.equal(read.timestamp, new Date(ms).toISOString().replace("Z", "+00:00"), "the id's time");
    assert.equal(read.user_key, "batch-user");
    assert.equal(read.decision, false);
    assert.equal(read.tenant, undefined, "left out: null");
    const filtered = (await call(acme.adminKey, "GET", `${logs}?pdp_id=pdp-batch`)).json;
    assert.deepEqual(
      filtered.data.map((e: { id: string }) => e.id),
      [id],
    );
  });

  test("a key without access gets 403 whatever body it sends: access is decided before validation", async () => {
    const { acme, call } = env();
    const P = acme.projectId;
    const prod = acme.envs.production;
    const dev = acme.envs.development;
    const invalid = { key: 42, name: ["not", "a", "name"], unknown_field: {} };
    const cases: [string, "POST" | "PUT" | "PATCH" | "DELETE", string][] = [
      ["readEnv", "POST", `/v2/facts/${P}/${prod}/users`],
      ["readEnv", "PUT", `/v2/facts/${P}/${prod}/users/alice`],
      ["readEnv", "POST", `/v2/schema/${P}/${prod}/resources`],
      ["readEnv", "PATCH", `/v2/projects/${P}/envs/${prod}`],
      ["readEnv", "POST", `/v2/pdps/${P}/${prod}/decision_logs`],
      ["readOrg", "POST", `/v2/facts/${P}/${prod}/tenants`],
      ["readOrg", "POST", `/v2/projects`],
      ["env", "POST", `/v2/facts/${P}/${dev}/users`],
      ["env", "POST", `/v2/schema/${P}/${dev}/roles`],
      ["env", "POST", `/v2/facts/other/production/users`],
      ["env", "PATCH", `/v2/projects/${P}`],
      ["env", "POST", `/v2/projects/${P}/envs`],
      ["env", "POST", `/v2/projects/${P}/envs/${prod}/copy`],
      ["env", "POST", `/v2/api-key`],
      ["project", "POST", `/v2/orgs`],
      ["project", "PATCH", `/v2/orgs/${acme.id}`],
      ["project", "POST", `/v2/projects`],
      ["project", "POST", `/v2/facts/other/production/users`],
    ];
    for (const [who, method, url] of cases) {
      const res = await call(keys[who]!, method, url, invalid);
      assert.equal(res.status, 403, `${who} ${method} ${url} -> ${res.status} ${res.body}`);
      assert.equal(res.json.error_code, "FORBIDDEN_ACCESS");
      assert.equal(res.json.detail, undefined);
    }
    // A key that may call the route still learns what is wrong with its body.
    const res = await call(keys["env"]!, "POST", `/v2/facts/${P}/${prod}/users`, invalid);
    assert.equal(res.status, 422);
    assert.ok(res.json.detail.length > 0);
  });

  test("keys reach what their scope covers", async () => {
    const { acme, call } = env();
    const P = acme.projectId;
    const prod = acme.envs.production;
    assert.equal((await call(keys["env"]!, "GET", `/v2/projects/${P}/envs/${prod}`)).status, 200);
    assert.equal((await call(keys["env"]!, "GET", `/v2/projects/default/envs/production`)).status, 200);
    assert.equal((await call(keys["readEnv"]!, "GET", `/v2/projects/${P}/envs/${prod}`)).status, 200);
    assert.equal(
      (await call(keys["project"]!, "GET", `/v2/projects/${P}/envs/${acme.envs.development}`)).status,
      200,
    );
    const envList = await call(keys["env"]!, "GET", `/v2/projects/${P}/envs`);
    assert.deepEqual(
      envList.json.map((e: { id: string }) => e.id),
      [prod],
    );
    const projList = await call(keys["project"]!, "GET", `/v2/projects`);
    assert.deepEqual(
      projList.json.map((p: { id: string }) => p.id),
      [P],
    );
    assert.equal((await call(keys["env"]!, "GET", `/v2/orgs/active/org`)).json.id, acme.id);
  });
});
