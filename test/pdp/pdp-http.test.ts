import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { disabledDecisionLogger } from "../../src/pdp/runtime/decision-log.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import {
  documentResource,
  folderResource,
  postAdultsReadPublicDocs,
  postFolderPeople,
} from "../helpers/schema-api.ts";
import type { FastifyRequest } from "fastify";
import { bulkCheckText, prepare } from "../../src/pdp/http/decide.ts";
import type { CheckQuery, Decision } from "../../src/pdp/engine/types.ts";
import { buildPdpApp } from "../../src/pdp/http/server.ts";
import type { AddressInfo } from "node:net";
import type { AppError } from "../../src/lib/errors.ts";
import { purgeDecisionLogsOlderThan } from "../../src/modules/decision-log/decision-log.service.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeEachDialect("PDP over HTTP (embedded)", (env) => {
  let pdp: TestPdp;
  let key = "";
  let orgKey = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";

  const ok = async (method: "POST" | "PUT", url: string, body: unknown) => {
    const res = await env().call(key, method, url, body);
    assert.ok(res.status >= 200 && res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
    return res;
  };
  const check = (user: unknown, action: string, resource: unknown, context: unknown = {}) =>
    pdp.call(key, "/allowed", { user, action, resource, context });

  before(async () => {
    const { acme, call } = env();
    orgKey = acme.adminKey;
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
    await ok("POST", `${S}/resources`, folderResource());
    await ok("POST", `${S}/resources`, documentResource());
    await ok("POST", `${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
    await ok("POST", `${S}/roles`, {
      key: "admin",
      name: "Admin",
      permissions: ["document:read", "document:write", "document:delete"],
    });
    await postFolderPeople(ok, F);
    await postAdultsReadPublicDocs(ok, S, F);
  });

  after(async () => {
    await pdp?.close();
  });

  test("RBAC in a tenant: allow with the role as reason, deny with the closest miss, tenants isolated", async () => {
    const allowed = await check({ key: "alice" }, "read", { type: "document", tenant: "t1" });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.json.allow, true);
    assert.equal(allowed.json.result, true);
    assert.deepEqual(allowed.json.debug.reason, { kind: "rbac", role: "viewer", tenant: "t1" });
    const noPermission = await check({ key: "alice" }, "delete", { type: "document", tenant: "t1" });
    assert.equal(noPermission.json.allow, false);
    assert.equal(noPermission.json.debug.reason.code, "NO_PERMISSION");
    const otherTenant = await check("alice", "read", "document");
    assert.equal(otherTenant.status, 200);
    assert.equal(otherTenant.json.allow, false, "alice's role in t1 grants nothing in the default tenant");
    assert.equal(
      (await check({ key: "bob" }, "delete", { type: "document", tenant: "t2" })).json.allow,
      true,
    );
    assert.equal((await check({ key: "bob" }, "read", { type: "document", tenant: "t1" })).json.allow, false);
    const unknown = await check({ key: "alice" }, "fly", { type: "document", tenant: "t1" });
    assert.equal(unknown.json.debug.reason.code, "UNKNOWN_ACTION");
    // A whole UserRead with extra fields is accepted, as the SDK may send one.
    const full = await check(
      { key: "alice", id: "x", roles: [], created_at: "now", firstName: "A" },
      "read",
      {
        type: "document",
        tenant: "t1",
      },
    );
    assert.equal(full.json.allow, true);
  });

  test("ReBAC: a folder role derives the document role through the parent relation", async () => {
    const res = await check({ key: "carol" }, "write", { type: "document", key: "d1", tenant: "t1" });
    assert.equal(res.json.allow, true, JSON.stringify(res.json));
    assert.equal(res.json.debug.reason.kind, "rebac");
    assert.equal(res.json.debug.reason.role, "editor");
    assert.equal(
      (await check({ key: "carol" }, "delete", { type: "document", key: "d1", tenant: "t1" })).json.allow,
      false,
    );
    assert.equal(
      (await check({ key: "carol" }, "write", { type: "document", key: "d2", tenant: "t1" })).json.allow,
      false,
    );
  });

  test("ABAC: a user set and a resource set with stored and request attributes", async () => {
    const res = await check({ key: "dave" }, "read", {
      type: "document",
      tenant: "t1",
      attributes: { public: true },
    });
    assert.equal(res.json.allow, true, JSON.stringify(res.json));
    assert.deepEqual(res.json.debug.reason, {
      kind: "abac",
      user_set: "adults",
      resource_set: "public_docs",
    });
    assert.equal(
      (
        await check({ key: "dave" }, "read", {
          type: "document",
          tenant: "t1",
          attributes: { public: false },
        })
      ).json.allow,
      false,
    );
    const young = await check({ key: "dave", attributes: { age: 12 } }, "read", {
      type: "document",
      tenant: "t1",
      attributes: { public: true },
    });
    assert.equal(young.json.allow, false, "request attributes win over stored ones");
  });

  test("/allowed/bulk's answer, encoded by hand, is byte for byte what JSON.stringify writes of the single answers", async () => {
    const checks = [
      ["alice", "read", { type: "document", tenant: "t1" }], // rbac
      ["alice", "delete", { type: "document", tenant: "t1" }], // NO_PERMISSION
      ["alice", "fly", { type: "document", tenant: "t1" }], // UNKNOWN_ACTION
      ["carol", "write", { type: "document", key: "d1", tenant: "t1" }], // rebac, with its path
      ["dave", "read", { type: "document", tenant: "t1", attributes: { public: true } }], // abac
      ["alice", "read", { type: "document", key: "not-synced-1", tenant: "default" }], // a message to escape
      ['no "such" user\u00e9', "read", { type: "document", tenant: "t1" }],
    ].map(([user, action, resource]) => ({ user: { key: user }, action, resource, context: {} }));
    const singles = [];
    for (const c of checks) singles.push((await pdp.call(key, "/allowed", c)).json);
    const bulk = await pdp.call(key, "/allowed/bulk", checks);
    assert.equal(bulk.status, 200);
    assert.equal(bulk.body, JSON.stringify({ allow: singles }));
    assert.deepEqual(
      singles.map((a: { debug: { reason: { kind: string } } }) => a.debug.reason.kind),
      ["rbac", "deny", "deny", "rebac", "abac", "deny", "deny"],
    );
  });

  test("a bulk check's decision-log text is what JSON.stringify writes of its record", () => {
    const reason = { kind: "deny", code: "NO_PERMISSION", message: 'no "role" \u00e9\n' };
    const decision = { allow: false, reason } as unknown as Decision;
    const checks: CheckQuery[] = [
      { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" }, context: {} },
      {
        user: { key: 'a"b' },
        action: "read",
        resource: { type: "document", key: "d\u2028", tenant: "t" },
        context: {},
      },
      { user: { key: "u" }, action: "write", resource: { type: "document" }, context: { ip: "1.2.3.4" } },
      {
        user: { key: "u", attributes: { age: 3 } },
        action: "read",
        resource: { type: "doc", attributes: { public: true }, tenant: "t" },
        context: {},
      },
    ];
    for (const check of checks) {
      const plain =
        Object.keys(check.context ?? {}).length === 0 && !check.user.attributes && !check.resource.attributes;
      const record = {
        user_key: check.user.key,
        action: check.action,
        resource_type: check.resource.type,
        resource_key: check.resource.key,
        tenant: check.resource.tenant,
        decision: false,
        reason,
        input: plain ? undefined : check,
        latency_us: 17,
      };
      assert.equal(bulkCheckText(check, decision, 17, JSON.stringify(reason)), JSON.stringify(record));
    }
  });

  test("bulk, user permissions, all tenants, authorized users and user tenants", async () => {
    const bulk = await pdp.call(key, "/allowed/bulk", [
      { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" }, context: {} },
      { user: { key: "alice" }, action: "write", resource: { type: "document", tenant: "t1" }, context: {} },
      { user: { key: "bob" }, action: "write", resource: { type: "document", tenant: "t2" }, context: {} },
    ]);
    assert.deepEqual(
      bulk.json.allow.map((r: { allow: boolean }) => r.allow),
      [true, false, true],
    );
    const perms = await pdp.call(key, "/user-permissions", { user: { key: "alice" } });
    assert.deepEqual(perms.json["__tenant:t1"].permissions, ["document:read"]);
    assert.deepEqual(perms.json["__tenant:t1"].roles, ["viewer"]);
    const tenants = await pdp.call(key, "/allowed/all-tenants", {
      user: { key: "bob" },
      action: "write",
      resource: { type: "document" },
      context: {},
    });
    assert.deepEqual(
      tenants.json.allowed_tenants.map((t: { tenant: { key: string } }) => t.tenant.key),
      ["t2"],
    );
    // What SDK 2.7.6 really sends: its axios config as the body, the key inside it, no Authorization header.
    const sdkStyle = await pdp.call(null, "/allowed/all-tenants", {
      headers: { Authorization: `Bearer ${key}`, "X-Permit-Sdk-Language": "node" },
      params: { user: "alice", action: "read", resource: "document", context: {} },
    });
    assert.equal(sdkStyle.status, 200, sdkStyle.body as string);
    assert.deepEqual(
      sdkStyle.json.allowedTenants.map((t: { tenant: { key: string } }) => t.tenant.key),
      ["t1"],
    );
    const authorized = await pdp.call(key, "/authorized_users", {
      action: "read",
      resource: { type: "document", tenant: "t1" },
    });
    assert.equal(authorized.status, 200);
    assert.ok(authorized.json.users["alice"], JSON.stringify(authorized.json));
    assert.equal(authorized.json.users["bob"], undefined);
    const userTenants = await pdp.call(key, "/user-tenants", { user: { key: "alice" } });
    assert.deepEqual(
      userTenants.json.map((t: { key: string }) => t.key),
      ["t1"],
    );
  });

  test("an instance the PDP does not hold: tenant roles and condition-set rules decide in the request's tenant", async () => {
    const rbac = await check({ key: "alice" }, "read", {
      type: "document",
      key: "not-synced-1",
      tenant: "t1",
    });
    assert.equal(rbac.json.allow, true, JSON.stringify(rbac.json));
    assert.deepEqual(rbac.json.debug.reason, { kind: "rbac", role: "viewer", tenant: "t1" });
    // What the SDK sends for check("alice", "read", "document:not-synced-1"): the default tenant.
    const sdk = await check("alice", "read", { type: "document", key: "not-synced-1", tenant: "default" });
    assert.equal(sdk.json.allow, false);
    assert.equal(sdk.json.debug.reason.code, "UNKNOWN_INSTANCE");
    assert.match(sdk.json.debug.reason.message, /no role in tenant 'default' \(has roles in t1\)/);
    const abac = await check({ key: "dave" }, "read", {
      type: "document",
      key: "not-synced-2",
      tenant: "t2",
      attributes: { public: true },
    });
    assert.deepEqual(abac.json.debug.reason, {
      kind: "abac",
      user_set: "adults",
      resource_set: "public_docs",
    });
    const listed = await pdp.call(key, "/authorized_users", {
      action: "read",
      resource: { type: "document", key: "not-synced-1", tenant: "t1" },
    });
    assert.deepEqual(Object.keys(listed.json.users), ["alice"]);
  });

  test("/user-permissions and /authorized_users say what /allowed allows: tenant roles on instances, condition-set rules", async () => {
    await ok("POST", `${F}/resource_instances`, {
      key: "pub",
      resource: "document",
      tenant: "t1",
      attributes: { public: true },
    });
    const dave = await pdp.call(key, "/user-permissions", { user: { key: "dave" } });
    assert.equal(dave.status, 200);
    assert.deepEqual(dave.json, {
      "document:pub": {
        permissions: ["document:read"],
        roles: [],
        tenant: { key: "t1", attributes: {} },
        resource: { key: "pub", type: "document", attributes: { public: true } },
      },
    });
    const alice = await pdp.call(key, "/user-permissions", { user: { key: "alice" } });
    assert.deepEqual(alice.json["document:d1"].permissions, ["document:read"]);
    assert.deepEqual(alice.json["document:d1"].roles, ["viewer"]);
    const readers = await pdp.call(key, "/authorized_users", {
      action: "read",
      resource: { type: "document", key: "pub" },
    });
    assert.deepEqual(readers.json.users, {
      alice: [{ user: "alice", tenant: "t1", resource: "__tenant:t1", role: "viewer" }],
      dave: [{ user: "dave", tenant: "t1", resource: "document:pub", role: "adults" }],
    });
    // Every (user, instance, action) pair: the listing and the check agree.
    const users = ["alice", "bob", "carol", "dave"];
    const permissions = Object.fromEntries(
      await Promise.all(
        users.map(async (user) => [
          user,
          (await pdp.call(key, "/user-permissions", { user: { key: user } })).json,
        ]),
      ),
    );
    for (const user of users) {
      for (const instance of ["d1", "pub"]) {
        for (const action of ["read", "write", "delete"]) {
          const allowed = (await check({ key: user }, action, { type: "document", key: instance })).json
            .allow;
          const listed = permissions[user][`document:${instance}`]?.permissions ?? [];
          assert.equal(
            listed.includes(`document:${action}`),
            allowed,
            `${user} ${action} document:${instance}`,
          );
          const authorized = await pdp.call(key, "/authorized_users", {
            action,
            resource: { type: "document", key: instance },
          });
          assert.equal(
            user in authorized.json.users,
            allowed,
            `authorized_users: ${user} ${action} ${instance}`,
          );
        }
      }
    }
  });

  test("AuthZEN evaluation API and the OPA-compatible port decide the same way", async () => {
    const one = await pdp.call(key, "/access/v1/evaluation", {
      subject: { type: "user", id: "alice" },
      action: { name: "read" },
      resource: { type: "document", id: "any", properties: { tenant: "t1" } },
    });
    assert.equal(one.json.decision, true);
    const many = await pdp.call(key, "/access/v1/evaluations", {
      subject: { type: "user", id: "alice" },
      resource: { type: "document", id: "any", properties: { tenant: "t1" } },
      evaluations: [{ action: { name: "read" } }, { action: { name: "delete" } }],
    });
    assert.deepEqual(
      many.json.evaluations.map((e: { decision: boolean }) => e.decision),
      [true, false],
    );
    const opa = await pdp.opaCall(key, "/v1/data/permit/root", {
      input: {
        user: { key: "alice" },
        action: "read",
        resource: { type: "document", tenant: "t1" },
        context: {},
      },
    });
    assert.equal(opa.json.result.allow, true);
    const opaBulk = await pdp.opaCall(key, "/v1/data/permit/bulk", {
      input: {
        checks: [
          { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" } },
          { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t2" } },
        ],
      },
    });
    assert.deepEqual(
      opaBulk.json.result.allow.map((r: { allow: boolean }) => r.allow),
      [true, false],
    );
  });

  test("keys: 401 without a valid key, 403 for a key that names no environment, other environments see nothing", async () => {
    const body = { user: "alice", action: "read", resource: { type: "document", tenant: "t1" } };
    assert.equal((await pdp.call(null, "/allowed", body)).status, 401);
    assert.equal((await pdp.call("gh_nope", "/allowed", body)).status, 401);
    const org = await pdp.call(orgKey, "/allowed", body);
    assert.equal(org.status, 403);
    const named = await pdp.call(orgKey, "/allowed", body, {
      "x-gatehouse-environment": "default/production",
    });
    assert.equal(named.json.allow, true);
    // Exactly <project>/<environment>: anything after it is not silently dropped.
    const extra = await pdp.call(orgKey, "/allowed", body, {
      "x-gatehouse-environment": "default/production/1",
    });
    assert.equal(extra.status, 403);
    const { globex, call } = env();
    const globexKey = (await call(globex.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    const theirs = await pdp.call(globexKey, "/allowed", body);
    assert.equal(theirs.status, 200);
    assert.equal(theirs.json.allow, false);
    assert.equal(theirs.json.debug.reason.code, "UNKNOWN_RESOURCE_TYPE");
    const cross = await pdp.call(globexKey, "/allowed", body, {
      "x-gatehouse-environment": `${env().acme.projectId}/production`,
    });
    assert.equal(cross.json.allow, false, "a key's own environment wins over a header naming another");
  });

  test("/ready and /metrics name no environment without a key; with one, the environment it selects", async () => {
    const { globex, call } = env();
    const globexKey = (await call(globex.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    // Both organizations' environments are held.
    for (const k of [key, globexKey])
      assert.equal(
        (
          await pdp.call(k, "/allowed", {
            user: "a",
            action: "read",
            resource: { type: "document", tenant: "t1" },
          })
        ).status,
        200,
      );
    const held = pdp.pdp.status().environments.map((e) => e.environmentId);
    assert.ok(held.length >= 2);
    const get = async (path: string, k?: string) => {
      const res = await fetch(pdp.url + path, {
        headers: k === undefined ? {} : { authorization: `Bearer ${k}` },
      });
      return { status: res.status, text: await res.text() };
    };
    const anonymous = [await get("/ready"), await get("/metrics")];
    for (const res of anonymous) {
      assert.equal(res.status, 200);
      for (const id of held) assert.ok(!res.text.includes(id), `${id} in ${res.text.slice(0, 300)}`);
    }
    assert.equal(JSON.parse(anonymous[0]!.text).environment_count, held.length);
    assert.match(anonymous[1]!.text, new RegExp(`^gatehouse_pdp_environments ${held.length}$`, "m"));

    const mine = await get("/ready", key);
    const listed = JSON.parse(mine.text).environments as { environmentId: string }[];
    assert.equal(listed.length, 1);
    const own = listed[0]!.environmentId;
    const metrics = (await get("/metrics", key)).text;
    assert.match(metrics, new RegExp(`gatehouse_pdp_revision\\{environment_id="${own}"\\} \\d+`));
    for (const id of held.filter((i) => i !== own))
      assert.ok(!metrics.includes(id) && !mine.text.includes(id));
    assert.equal((await get("/ready", "gh_nope")).status, 401);
  });

  test("bad input is a 422 with the error body", async () => {
    for (const body of [
      { user: "alice", resource: "document" },
      { user: 5, action: "read", resource: "document" },
      { user: "alice", action: "read", resource: { key: "x" } },
      { user: "alice", action: "read", resource: "document", context: "x" },
    ]) {
      const res = await pdp.call(key, "/allowed", body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.json.error_code, "INVALID_INPUT");
    }
    assert.equal((await pdp.call(key, "/allowed/bulk", { not: "an array" })).status, 422);
  });

  test("consistency: a check naming a revision waits for it; one that cannot arrive is a 504", async () => {
    const write = await env().call(key, "POST", `${F}/role_assignments`, {
      user: "bob",
      role: "viewer",
      tenant: "t1",
    });
    const revision = Number(write.headers["x-gatehouse-revision"]);
    assert.ok(revision > 0);
    const res = await pdp.call(key, "/allowed", {
      user: "bob",
      action: "read",
      resource: { type: "document", tenant: "t1" },
      min_revision: revision,
    });
    assert.equal(res.json.allow, true);
    assert.ok(res.json.debug.revision >= revision);
    // Two checks that cannot be answered, with bounds of 0.3 s and 3 s: each waits its own bound, so the
    // shorter one answers first (order, not speed, so a busy machine cannot fail it).
    const answered: string[] = [];
    const unreachable = (bound: string) =>
      pdp
        .call(
          key,
          "/allowed",
          { user: "bob", action: "read", resource: "document" },
          { "x-gatehouse-min-revision": String(revision + 1000), "x-gatehouse-wait-timeout-ms": bound },
        )
        .then((reply) => {
          answered.push(bound);
          return reply;
        });
    const [long, short] = await Promise.all([unreachable("3000"), unreachable("300")]);
    assert.equal(short.status, 504);
    assert.equal(long.status, 504);
    assert.deepEqual(answered, ["300", "3000"], "the shorter bound answers first");
  });

  test("facts proxy: writes through the PDP are visible to the next check", async () => {
    const created = await pdp.call(key, "/v2/facts/any/any/users", { key: "erin" });
    assert.equal(created.status, 201, created.body as string);
    const assigned = await pdp.call(key, "/v2/facts/any/any/role_assignments", {
      user: "erin",
      role: "viewer",
      tenant: "t1",
    });
    assert.equal(assigned.status, 200, assigned.body as string);
    assert.equal(assigned.json.user, "erin");
    const res = await check({ key: "erin" }, "read", { type: "document", tenant: "t1" });
    assert.equal(res.json.allow, true);
    const bad = await pdp.call(
      key,
      "/v2/facts/any/any/users",
      { key: "frank" },
      { "x-wait-timeout": "soon" },
    );
    assert.equal(bad.status, 422);
    const list = await pdp.app.inject({
      method: "GET",
      url: "/v2/facts/x/y/users?per_page=1",
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(list.statusCode, 200);
    assert.equal(list.json().data.length, 1);
  });

  // That gatehouse serve wires key changes to invalidateKeys() is checked on the real server (test/e2e/pdp-keys.test.ts).
  test("the PDP remembers keys it has seen; invalidateKeys() makes it forget a revoked one at once", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", "/v2/api-key", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.production,
      access_level: "read",
    });
    assert.equal(created.status, 200, created.body);
    const body = { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "t1" } };
    assert.equal((await pdp.call(created.json.secret, "/allowed", body)).status, 200);
    assert.equal(
      (await pdp.call(created.json.secret, "/allowed", body)).status,
      200,
      "answered from the cache",
    );
    assert.equal((await call(acme.adminKey, "DELETE", `/v2/api-key/${created.json.id}`)).status, 204);
    pdp.pdp.invalidateKeys();
    assert.equal((await pdp.call(created.json.secret, "/allowed", body)).status, 401);
  });

  test("a check whose key was just looked up and the next, answered from the key cache without a promise, answer alike", async () => {
    const { acme, call } = env();
    const created = await call(acme.adminKey, "POST", "/v2/api-key", {
      object_type: "env",
      project_id: acme.projectId,
      environment_id: acme.envs.production,
      access_level: "read",
    });
    assert.equal(created.status, 200, created.body);
    const secret: string = created.json.secret;
    const allow = { user: "alice", action: "read", resource: { type: "document", tenant: "t1" } };
    const deny = { user: "alice", action: "delete", resource: { type: "document", tenant: "t1" } };
    const cases: [TestPdp["call"], string, unknown, number][] = [
      [pdp.call, "/allowed", allow, 200],
      [pdp.call, "/allowed", deny, 200],
      [pdp.call, "/allowed/bulk", [allow, deny], 200],
      [pdp.call, "/allowed", { user: 5, action: "read", resource: "document" }, 422],
      [pdp.call, "/allowed/bulk", { not: "an array" }, 422],
      [(k, url, body) => pdp.opaCall(k as string, url, body), "/v1/data/permit/root", { input: allow }, 200],
      [
        (k, url, body) => pdp.opaCall(k as string, url, body),
        "/v1/data/permit/bulk",
        { input: { checks: [allow, deny] } },
        200,
      ],
    ];
    for (const [send, url, body, status] of cases) {
      pdp.pdp.invalidateKeys();
      const looked = await send(secret, url, body);
      const cached = await send(secret, url, body);
      assert.equal(looked.status, status, `${url} ${looked.body}`);
      assert.equal(cached.status, looked.status, url);
      assert.equal(cached.headers["content-type"], looked.headers["content-type"], url);
      // An error's id is its own; everything else is the same.
      const withoutId = (json: Record<string, unknown>) => ({ ...json, id: undefined });
      assert.deepEqual(withoutId(cached.json), withoutId(looked.json), url);
    }
    assert.equal((await pdp.call(secret, "/allowed", allow)).json.allow, true);
    assert.equal((await pdp.call(secret, "/allowed", deny)).json.allow, false);

    // The hot path itself: a cached key and no revision to wait for give the target, not a promise.
    const request = (headers: Record<string, string> = {}) =>
      ({
        headers: { authorization: `Bearer ${secret}`, ...headers },
        body: allow,
      }) as unknown as FastifyRequest;
    const target = prepare(pdp.pdp, request());
    assert.ok(!(target instanceof Promise), "a cached key is resolved at once");
    assert.equal(target.environmentId, acme.envs.production);
    const ahead = prepare(
      pdp.pdp,
      request({
        "x-gatehouse-min-revision": String(target.replica.revision + 1000),
        "x-gatehouse-wait-timeout-ms": "0",
      }),
    );
    assert.ok(ahead instanceof Promise, "a revision to wait for is a promise");
    await assert.rejects(ahead, (error: AppError) => error.code === "TIMEOUT");
    await assert.rejects(
      async () => prepare(pdp.pdp, request({ authorization: "Bearer gh_nope_not_a_key" })),
      {
        code: "UNAUTHORIZED",
      },
    );
  });

  test("a plain check is answered by node:http without Fastify, and exactly as Fastify answers it", async () => {
    // A PDP port of its own, whose Fastify counts what reaches it.
    const app = await buildPdpApp(pdp.pdp);
    let viaFastify = 0;
    app.addHook("onRequest", (_request, _reply, done) => {
      viaFastify++;
      done();
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const allow = { user: "alice", action: "read", resource: { type: "document", tenant: "t1" } };
      const cases: [string, string | Buffer, string | null][] = [
        ["/allowed", JSON.stringify(allow), key],
        ["/allowed", JSON.stringify({ ...allow, action: "delete" }), key],
        ["/allowed/bulk", JSON.stringify([allow, { ...allow, user: "nobody" }]), key],
        ["/allowed", JSON.stringify({ user: 5, action: "read", resource: "document" }), key],
        ["/allowed", '{"user": "alice",', key],
        ["/allowed", Buffer.from([0x7b, 0xff, 0x7d]), key],
        ["/allowed", JSON.stringify(allow), null],
        ["/allowed", JSON.stringify(allow), "gh_nope_not_a_key"],
        ["/allowed", JSON.stringify({ ...allow, min_revision: -1 }), key],
        ["/allowed/bulk", '{"not": "an array"}', key],
      ];
      for (const [path, body, as] of cases) {
        const headers = {
          "content-type": "application/json",
          ...(as !== null && { authorization: `Bearer ${as}` }),
        };
        const before = viaFastify;
        const plain = await fetch(url + path, {
          method: "POST",
          headers,
          body: new Uint8Array(Buffer.from(body)),
        });
        assert.equal(viaFastify, before, `${path} ${String(body)}: a plain request does not reach Fastify`);
        // A chunked body (no Content-Length) is Fastify's to read.
        const chunked = await fetch(url + path, {
          method: "POST",
          headers,
          body: new Blob([new Uint8Array(Buffer.from(body))]).stream(),
          duplex: "half",
        } as RequestInit);
        assert.equal(viaFastify, before + 1, "a chunked request goes to Fastify");
        assert.equal(plain.status, chunked.status, `${path} ${String(body)}`);
        assert.equal(plain.headers.get("content-type"), chunked.headers.get("content-type"));
        assert.equal(plain.headers.get("retry-after"), chunked.headers.get("retry-after"));
        const [a, b] = [await plain.json(), await chunked.json()];
        // An error's id is its own; everything else is the same.
        assert.deepEqual({ ...a, id: undefined }, { ...b, id: undefined }, `${path} ${String(body)}`);
      }
      // Anything else still goes to Fastify: another route, a query string, another media type.
      const before = viaFastify;
      const other = [
        await fetch(`${url}/health`),
        await fetch(`${url}/allowed?x=1`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify(allow),
        }),
        await fetch(`${url}/allowed`, {
          method: "POST",
          headers: { "content-type": "application/xml", authorization: `Bearer ${key}` },
          body: "x",
        }),
      ];
      assert.deepEqual(
        other.map((r) => r.status),
        [200, 200, 415],
      );
      assert.equal(viaFastify, before + 3);
    } finally {
      await app.close();
    }
  });

  test("decision log: every decision with its reason, filterable, readable one by one", async () => {
    await check({ key: "alice" }, "delete", { type: "document", tenant: "t1" });
    await pdp.pdp.decisions.flush();
    const denied = await env().call(
      key,
      "GET",
      "/v2/pdps/default/production/audit_logs?decision=false&users=alice",
    );
    assert.equal(denied.status, 200);
    assert.ok(denied.json.data.length >= 1);
    for (const entry of denied.json.data) {
      assert.equal(entry.user_key, "alice");
      assert.equal(entry.decision, false);
      assert.match(entry.reason, /^denied/);
    }
    const one = await env().call(
      key,
      "GET",
      `/v2/pdps/default/production/audit_logs/${denied.json.data[0].id}`,
    );
    assert.equal(one.status, 200);
    assert.equal(one.json.input.user.key, "alice");
    assert.deepEqual(one.json.result, { allow: false }, "a check's result is its decision");
    assert.deepEqual(
      one.json.input,
      { user: { key: "alice" }, action: "delete", resource: { type: "document", tenant: "t1" }, context: {} },
      "a plain check's input is rebuilt from the entry's columns",
    );
    await check(
      { key: "bob", attributes: { level: 3 } },
      "read",
      { type: "document", key: "d9", tenant: "t1" },
      {
        ip: "10.0.0.1",
      },
    );
    await pdp.pdp.decisions.flush();
    const rich = await env().call(key, "GET", "/v2/pdps/default/production/audit_logs?users=bob");
    const richOne = await env().call(
      key,
      "GET",
      `/v2/pdps/default/production/audit_logs/${rich.json.data[0].id}`,
    );
    assert.deepEqual(richOne.json.input, {
      user: { key: "bob", attributes: { level: 3 } },
      action: "read",
      resource: { type: "document", tenant: "t1", key: "d9" },
      context: { ip: "10.0.0.1" },
    });
    assert.ok(Number.isInteger(one.json.revision));
    const other = await env().call(orgKey, "GET", "/v2/pdps/default/development/audit_logs");
    assert.equal(other.json.total_count, 0, `another environment's decisions are not here: ${other.body}`);
    assert.equal(
      (await env().call(key, "GET", "/v2/pdps/default/production/audit_logs?per_page=101")).status,
      422,
    );
  });

  test("an environment's copy no check asked for in the idle time is let go; the next check loads it with the writes made meanwhile", async () => {
    const idle = await startTestPdp(env(), { idleMs: 3000 });
    try {
      const held = () => idle.pdp.status().environments.map((e) => e.environmentId);
      const copy = async () => (await idle.pdp.resolve(`Bearer ${key}`, { headers: {} } as never)).replica;
      const read = (user: string) =>
        idle.call(key, "/allowed", { user, action: "read", resource: { type: "document", tenant: "t2" } });
      assert.equal((await read("bob")).json.allow, true);
      assert.equal((await read("carol")).json.allow, false);
      const [production] = held();
      assert.ok(production, "the first check loads the environment");
      const first = await copy();
      // Checks every 100 ms for longer than the idle time keep the copy.
      for (const until = Date.now() + 4500; Date.now() < until;) {
        assert.equal((await read("bob")).json.allow, true);
        await sleep(100);
      }
      assert.deepEqual(held(), [production]);
      assert.equal(await copy(), first, "a copy in use stays (it was not let go and loaded again)");
      // Idle: it goes within the idle time and one poll (0.5 s).
      for (const until = Date.now() + 10_000; held().length > 0 && Date.now() < until;) await sleep(100);
      assert.deepEqual(held(), [], "an idle copy is let go");
      await ok("POST", `${F}/role_assignments`, { user: "carol", role: "viewer", tenant: "t2" });
      const carol = await read("carol");
      assert.equal(
        carol.json.allow,
        true,
        `loaded again, with the write made while it was away: ${carol.body}`,
      );
      assert.deepEqual(held(), [production]);
    } finally {
      await idle.close();
    }
  });

  test("decision log retention: decisions older than the retention are purged, 0 keeps them", async () => {
    await check({ key: "alice" }, "read", { type: "document", tenant: "t1" });
    await pdp.pdp.decisions.flush();
    const { db } = env().store;
    const count = async () =>
      (await db.selectFrom("decision_log_chunks").select("count").execute()).reduce((n, c) => n + c.count, 0);
    const before = await count();
    assert.ok(before > 0);
    assert.equal(await purgeDecisionLogsOlderThan(db, 0, Date.now() + 365 * 86_400_000), 0);
    assert.equal(await purgeDecisionLogsOlderThan(db, 30, Date.now()), 0, "nothing is 30 days old yet");
    assert.equal(await purgeDecisionLogsOlderThan(db, 30, Date.now() + 31 * 86_400_000), before);
    assert.equal(await count(), 0);
  });

  test("with the decision log off, checks are answered as with it on, and nothing is recorded", async () => {
    const off = await startTestPdp(env(), { decisions: disabledDecisionLogger });
    const { db } = env().store;
    const recorded = async () =>
      (await db.selectFrom("decision_log_chunks").select("count").execute()).reduce((n, c) => n + c.count, 0);
    try {
      await pdp.pdp.decisions.flush();
      const before = await recorded();
      const bodies = [
        { user: "bob", action: "read", resource: { type: "document", tenant: "t2" } },
        { user: "bob", action: "delete", resource: { type: "document", tenant: "t2" } },
      ];
      const allows: boolean[] = [];
      for (const body of bodies) {
        const answer = await off.call(key, "/allowed", body);
        assert.equal(answer.status, 200);
        assert.deepEqual(answer.json, (await pdp.call(key, "/allowed", body)).json);
        allows.push(answer.json.allow);
      }
      const bulk = await off.call(key, "/allowed/bulk", bodies);
      assert.deepEqual(
        (bulk.json.allow as { allow: boolean }[]).map((a) => a.allow),
        allows,
      );
      await off.pdp.decisions.flush();
      await pdp.pdp.decisions.flush();
      assert.equal(await recorded(), before + bodies.length, "only the logging PDP's checks are recorded");
    } finally {
      await off.close();
    }
  });
});
