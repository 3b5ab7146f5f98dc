import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import {
  documentResource,
  folderResource,
  postAdultsReadPublicDocs,
  postFolderPeople,
} from "../helpers/schema-api.ts";

describeEachDialect("checks on the control plane (/v2/pdps/{proj}/{env}/allowed ...)", (env) => {
  let pdp: TestPdp;
  let envKey = "";
  let readKey = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";
  const C = "/v2/pdps/default/production";

  const ok = async (method: "POST" | "PUT", url: string, body: unknown) => {
    const res = await env().call(envKey, method, url, body);
    assert.ok(res.status >= 200 && res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
    return res;
  };

  before(async () => {
    const { acme, call } = env();
    envKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    const reader = await call(acme.adminKey, "POST", "/v2/api-key", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.production,
      access_level: "read",
      name: "reader",
    });
    readKey = reader.json.secret;
    pdp = await startTestPdp(env());
    await ok("POST", `${S}/resources`, folderResource());
    await ok("POST", `${S}/resources`, documentResource());
    await ok("POST", `${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
    await ok("POST", `${S}/roles`, { key: "admin", name: "Admin", permissions: ["document:delete"] });
    await postFolderPeople(ok, F);
    await postAdultsReadPublicDocs(ok, S, F);
  });

  after(async () => {
    await pdp?.close();
  });

  test("a read key checks: the PDP's answer with the derivation path, the closest miss and the revision", async () => {
    const { call } = env();
    const derived = {
      user: "carol",
      action: "write",
      resource: { type: "document", key: "d1", tenant: "t1" },
    };
    const allowed = await call(readKey, "POST", `${C}/allowed`, derived);
    assert.equal(allowed.status, 200, allowed.body);
    assert.equal(allowed.json.allow, true);
    assert.deepEqual(allowed.json.reason, {
      kind: "rebac",
      role: "editor",
      instance: "document:d1",
      tenant: "t1",
      via: [{ role: "editor", instance: "folder:f1", relation: "parent" }],
    });
    assert.match(allowed.json.explanation, /derived from 'editor' on folder:f1 via 'parent'/);
    const head = await call(envKey, "GET", `${C}/status`);
    assert.equal(head.status, 200);
    assert.equal(allowed.json.revision, head.json.environment_revision);
    assert.equal(head.json.pdp_revision, head.json.environment_revision);
    assert.equal(head.json.revisions_behind, 0);

    // The same as the PDP's own /allowed, reason and all.
    const viaPdp = await pdp.call(envKey, "/allowed", derived);
    assert.equal(viaPdp.json.allow, true);
    assert.deepEqual(viaPdp.json.debug, allowed.json.debug);

    const denied = await call(readKey, "POST", `${C}/allowed`, {
      user: "carol",
      action: "delete",
      resource: { type: "document", key: "d1", tenant: "t1" },
    });
    assert.equal(denied.json.allow, false);
    assert.equal(denied.json.reason.code, "NO_PERMISSION");
    assert.equal(
      denied.json.reason.message,
      "user 'carol' has role editor on document:d1, which lacks document:delete",
    );
    assert.match(denied.json.explanation, /^denied \(NO_PERMISSION\)/);

    const abac = await call(readKey, "POST", `${C}/allowed`, {
      user: { key: "dave", attributes: { age: 30 } },
      action: "read",
      resource: { type: "document", tenant: "t1", attributes: { public: true } },
    });
    assert.deepEqual(abac.json.reason, { kind: "abac", user_set: "adults", resource_set: "public_docs" });
  });

  test("bulk checks and user permissions; decisions go to the decision log and its stats", async () => {
    const { call } = env();
    const bulk = await call(readKey, "POST", `${C}/allowed/bulk`, [
      { user: "alice", action: "read", resource: { type: "document", tenant: "t1" } },
      { user: "alice", action: "delete", resource: { type: "document", tenant: "t1" } },
    ]);
    assert.equal(bulk.status, 200, bulk.body);
    assert.deepEqual(
      bulk.json.allow.map((r: { allow: boolean }) => r.allow),
      [true, false],
    );
    assert.deepEqual(bulk.json.allow[0].reason, { kind: "rbac", role: "viewer", tenant: "t1" });
    const perms = await call(readKey, "POST", `${C}/user-permissions`, { user: "carol", tenants: ["t1"] });
    assert.equal(perms.status, 200, perms.body);
    assert.deepEqual(perms.json.permissions["document:d1"].roles, ["editor"]);
    assert.equal(typeof perms.json.revision, "number");

    await pdp.pdp.decisions.flush();
    const logged = await call(readKey, "GET", `${C}/audit_logs?users=alice&query=bulk_check`);
    assert.equal(logged.status, 200);
    assert.equal(logged.json.total_count, 2);
    const stats = await call(readKey, "GET", `${C}/decision_logs/stats?users=alice`);
    assert.equal(stats.status, 200, stats.body);
    const sum = (d: string) =>
      stats.json.data
        .filter((r: { decision: string }) => r.decision === d)
        .reduce((n: number, r: { count: number }) => n + r.count, 0);
    assert.equal(sum("allow"), 1);
    assert.equal(sum("deny"), 1);
    const none = await call(readKey, "GET", `${C}/decision_logs/stats?users=nobody`);
    assert.deepEqual(none.json.data, []);
    const backwards = await call(
      readKey,
      "GET",
      `${C}/decision_logs/stats?timestamp_from=100&timestamp_to=50`,
    );
    assert.equal(backwards.status, 422);
  });

  test("a filter plan on both ports: tenant roles as tenants, derived roles as keys; bad input is 422", async () => {
    const { call, globex } = env();
    const carol = { user: "carol", action: "write", resource: { type: "document" } };
    const plan = await call(readKey, "POST", `${C}/plan/resources`, carol);
    assert.equal(plan.status, 200, plan.body);
    assert.deepEqual(
      { kind: plan.json.kind, condition: plan.json.condition, key_count: plan.json.key_count },
      { kind: "conditional", condition: { operator: "in", field: "key", value: ["d1"] }, key_count: 1 },
    );
    const head = await call(envKey, "GET", `${C}/status`);
    assert.equal(plan.json.revision, head.json.environment_revision);
    const viaPdp = await pdp.call(envKey, "/plan/resources", carol);
    assert.equal(viaPdp.status, 200, viaPdp.body);
    assert.deepEqual(viaPdp.json, plan.json);

    const alice = await pdp.call(envKey, "/plan/resources", {
      user: "alice",
      action: "read",
      resource: "document",
    });
    assert.deepEqual(alice.json.condition, { operator: "in", field: "tenant", value: ["t1"] });
    // dave is an adult: the condition-set rule becomes a comparison on the document's field.
    const dave = await pdp.call(envKey, "/plan/resources", {
      user: "dave",
      action: "read",
      resource: "document",
    });
    assert.deepEqual(dave.json.condition, { operator: "eq", field: "public", value: true });
    const nothing = await call(readKey, "POST", `${C}/plan/resources`, { ...carol, action: "destroy" });
    assert.equal(nothing.json.kind, "always_denied");

    const withKey = await call(readKey, "POST", `${C}/plan/resources`, {
      ...carol,
      resource: { type: "document", key: "d1" },
    });
    assert.equal(withKey.status, 422, withKey.body);
    const onPdp = await pdp.call(envKey, "/plan/resources", {
      ...carol,
      resource: { type: "document", key: "d1" },
    });
    assert.equal(onPdp.status, 422, onPdp.body);
    const missing = await pdp.call(envKey, "/plan/resources", { user: "carol", resource: "document" });
    assert.equal(missing.status, 422, missing.body);
    const foreign = await call(globex.adminKey, "POST", `${C}/plan/resources`, carol);
    // Another organization's default/production is its own environment: it holds nothing of acme's.
    assert.equal(foreign.json.kind, "always_denied", foreign.body);
  });

  test("bad input is a 4xx and decides nothing; other organizations and wrong keys see nothing", async () => {
    const { call, globex } = env();
    const before = await call(readKey, "GET", `${C}/audit_logs?users=zed`);
    for (const body of [
      {},
      { user: "zed", action: "", resource: "document" },
      { user: "zed", action: "read" },
    ]) {
      const res = await call(readKey, "POST", `${C}/allowed`, body);
      assert.equal(res.status, 422, res.body);
      assert.equal(typeof res.json.message, "string");
    }
    await pdp.pdp.decisions.flush();
    const after = await call(readKey, "GET", `${C}/audit_logs?users=zed`);
    assert.equal(after.json.total_count, before.json.total_count);
    const other = await call(globex.adminKey, "POST", `${C}/allowed`, {
      user: "carol",
      action: "write",
      resource: "document:d1",
    });
    // globex's own default/production holds none of acme's model.
    assert.equal(other.status, 200, other.body);
    assert.equal(other.json.allow, false);
    assert.equal(other.json.reason.code, "UNKNOWN_RESOURCE_TYPE");
    const stranger = await call(
      globex.adminKey,
      "POST",
      `/v2/pdps/${env().acme.projectId}/production/allowed`,
      {
        user: "carol",
        action: "write",
        resource: "document:d1",
      },
    );
    assert.ok([403, 404].includes(stranger.status), stranger.body);
    assert.equal(
      (await call(null, "POST", `${C}/allowed`, { user: "a", action: "b", resource: "c" })).status,
      401,
    );
  });
});
