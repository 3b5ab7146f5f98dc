// The PDP paths Permit's other SDKs send (issue 35): facts without project and environment (the Python SDK's
// `proxy_facts_via_pdp`), Permit's local API, and facts paths that try to climb out of the facts routes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

/** A request with its path sent byte for byte (fetch would resolve `..` and `%2e%2e` before sending). */
function raw(
  base: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; json: any }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined && { "content-type": "application/json" }),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          let json: unknown;
          try {
            json = text === "" ? undefined : JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describeEachDialect("PDP: the paths Permit's SDKs send", (env) => {
  let pdp: TestPdp;
  let key = "";
  let otherKey = "";
  const S = "/v2/schema/default/production";

  before(async () => {
    const { acme, globex, call } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    otherKey = (await call(globex.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
    for (const k of [key, otherKey]) {
      const made = await call(k, "POST", `${S}/resources`, {
        key: "document",
        name: "Document",
        actions: { read: {}, write: {} },
        roles: { owner: { name: "Owner", permissions: ["read", "write"] } },
      });
      assert.ok(made.status < 300, made.body);
      const role = await call(k, "POST", `${S}/roles`, {
        key: "viewer",
        name: "Viewer",
        permissions: ["document:read"],
      });
      assert.ok(role.status < 300, role.body);
    }
  });

  after(async () => {
    await pdp?.close();
  });

  test("facts without project and environment: the key's environment, as the Python SDK sends them", async () => {
    const created = await raw(pdp.url, "POST", "/facts/users", key, { key: "pam" });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.key, "pam");
    const tenant = await raw(pdp.url, "POST", "/facts/tenants", key, { key: "t1", name: "T1" });
    assert.equal(tenant.status, 201, JSON.stringify(tenant.json));
    const assigned = await raw(pdp.url, "POST", "/facts/role_assignments", key, {
      user: "pam",
      role: "viewer",
      tenant: "t1",
    });
    assert.equal(assigned.status, 200, JSON.stringify(assigned.json));
    // A waiting write: the next check sees it.
    const allowed = await pdp.call(key, "/allowed", {
      user: { key: "pam" },
      action: "read",
      resource: { type: "document", tenant: "t1" },
      context: {},
    });
    assert.equal(allowed.json.allow, true);
    const bulk = await raw(pdp.url, "PUT", "/facts/bulk/users", key, {
      operations: [{ key: "quinn" }, { key: "rita" }],
    });
    assert.equal(bulk.status, 200, JSON.stringify(bulk.json));
    const listed = await raw(pdp.url, "GET", "/facts/users?search=quinn", key);
    assert.equal(listed.status, 200, JSON.stringify(listed.json));
    assert.deepEqual(
      listed.json.data.map((u: { key: string }) => u.key),
      ["quinn"],
    );
    // The other organization's environment does not see them.
    const elsewhere = await raw(pdp.url, "GET", "/facts/users/pam", otherKey);
    assert.equal(elsewhere.status, 404);
  });

  test("an organization key names no environment: 403 that says how to name one", async () => {
    const answer = await raw(pdp.url, "POST", "/facts/users", env().acme.adminKey, { key: "sam" });
    assert.equal(answer.status, 403, JSON.stringify(answer.json));
    assert.match(answer.json.message, /x-gatehouse-environment/);
    const { call, acme } = env();
    assert.equal((await call(acme.adminKey, "GET", "/v2/facts/default/production/users/sam")).status, 404);
  });

  test("facts paths that would leave the facts routes are 400 and change nothing", async () => {
    const paths = [
      "/v2/facts/a/b/%2e%2e/%2e%2e/projects",
      "/v2/facts/a/b/%2E%2E/%2e./schema/x/y/roles",
      "/v2/facts/%2e%2e/%2e%2e/users",
      "/facts/..%2fusers",
      "/facts/users/%2e%2e",
      "/facts/users/../../api-key",
      "/facts/./users",
      "/facts/users/a%5c..",
      "/facts/users/a\\..",
      "/facts/users/a%2Fb",
    ];
    for (const path of paths) {
      const answer = await raw(pdp.url, "POST", path, key, { key: "mallory" });
      assert.equal(answer.status, 400, `${path}: ${JSON.stringify(answer.json)}`);
      assert.equal(answer.json.error_code, "BAD_REQUEST", path);
    }
    const { call, acme } = env();
    assert.equal(
      (await call(acme.adminKey, "GET", "/v2/facts/default/production/users/mallory")).status,
      404,
    );
  });

  test("wrong credentials on the facts proxy's climbing paths: refused, whatever the key, and nothing reaches the control plane", async () => {
    const { acme, call } = env();
    const readKey = (
      await call(acme.adminKey, "POST", "/v2/api-key", {
        name: "read-only",
        object_type: "env",
        project_id: acme.projectId,
        environment_id: acme.envs.production,
        access_level: "read",
      })
    ).json.secret as string;
    const keysBefore = (await call(acme.adminKey, "GET", "/v2/api-key?per_page=100")).json;
    const credentials: [string, string][] = [
      ["no key", ""],
      ["an unknown key", "gh_not_a_key_at_all"],
      ["another organization's environment key", otherKey],
      ["a read-only environment key", readKey],
      ["an organization key naming no environment", acme.adminKey],
    ];
    const paths = [
      ["POST", "/v2/facts/a/b/%2e%2e/%2e%2e/%2e%2e/api-key"],
      ["GET", "/v2/facts/a/b/%2e%2e/%2e%2e/projects"],
      ["POST", "/facts/..%2f..%2fapi-key"],
      ["DELETE", "/facts/users/%2e%2e/%2e%2e/%2e%2e/projects/default"],
    ];
    const unexpected: string[] = [];
    for (const [name, credential] of credentials) {
      for (const [method, path] of paths) {
        const answer = await raw(
          pdp.url,
          method!,
          path!,
          credential,
          method === "GET" ? undefined : { name: "x" },
        );
        if (![400, 401, 403].includes(answer.status))
          unexpected.push(`${name}: ${method} ${path} -> ${answer.status} ${JSON.stringify(answer.json)}`);
      }
    }
    assert.deepEqual(unexpected, []);
    assert.deepEqual((await call(acme.adminKey, "GET", "/v2/api-key?per_page=100")).json, keysBefore);
    assert.equal((await call(acme.adminKey, "GET", "/v2/projects/default")).status, 200);
  });

  test("GET /local/role_assignments: the PDP's own assignments, filtered and paged like Permit's", async () => {
    const { call } = env();
    const F = "/v2/facts/default/production";
    for (const user of ["ann", "bob"])
      assert.equal((await call(key, "POST", `${F}/users`, { key: user })).status, 201);
    assert.equal((await call(key, "POST", `${F}/tenants`, { key: "t2", name: "T2" })).status, 201);
    const inst = await call(key, "POST", `${F}/resource_instances`, {
      key: "d1",
      resource: "document",
      tenant: "t2",
    });
    assert.equal(inst.status, 201, inst.body);
    for (const body of [
      { user: "ann", role: "viewer", tenant: "t1" },
      { user: "ann", role: "viewer", tenant: "t2" },
      { user: "bob", role: "owner", tenant: "t2", resource_instance: "document:d1" },
    ]) {
      const res = await call(key, "POST", `${F}/role_assignments`, body);
      assert.equal(res.status, 200, res.body);
    }
    // The other organization's assignment is not in this environment's answer.
    assert.equal((await call(otherKey, "POST", `${F}/users`, { key: "ann" })).status, 201);
    await call(otherKey, "POST", `${F}/tenants`, { key: "t1", name: "T1" });
    assert.equal(
      (await call(otherKey, "POST", `${F}/role_assignments`, { user: "ann", role: "viewer", tenant: "t1" }))
        .status,
      200,
    );
    const local = async (query: string) => {
      const res = await raw(pdp.url, "GET", `/local/role_assignments${query}`, key);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      return res.json;
    };
    // Read after the writes: the PDP may still be applying them.
    const deadline = Date.now() + 5000;
    while ((await local("?user=bob")).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(await local("?user=ann"), [
      { user: "ann", role: "viewer", tenant: "t1" },
      { user: "ann", role: "viewer", tenant: "t2" },
    ]);
    assert.deepEqual(await local("?tenant=t2"), [
      { user: "ann", role: "viewer", tenant: "t2" },
      { user: "bob", role: "owner", tenant: "t2", resource_instance: "document:d1" },
    ]);
    assert.deepEqual(await local("?resource=document"), [
      { user: "bob", role: "owner", tenant: "t2", resource_instance: "document:d1" },
    ]);
    assert.deepEqual(await local("?resource_instance=document:d1&role=owner"), [
      { user: "bob", role: "owner", tenant: "t2", resource_instance: "document:d1" },
    ]);
    assert.deepEqual(await local("?user=nobody"), []);
    // Users in the order they were created, each one's sorted: a page is a slice of that list.
    const viewers = await local("?role=viewer&per_page=100");
    const annAt = viewers.findIndex((a: { user: string }) => a.user === "ann");
    assert.deepEqual(viewers.slice(annAt, annAt + 2), [
      { user: "ann", role: "viewer", tenant: "t1" },
      { user: "ann", role: "viewer", tenant: "t2" },
    ]);
    assert.deepEqual(await local(`?role=viewer&per_page=1&page=${annAt + 2}`), [viewers[annAt + 1]]);
    // The same assignments as the control plane's list.
    const all = await local("?per_page=100");
    const cp = await call(key, "GET", `${F}/role_assignments?per_page=100`);
    assert.equal(cp.status, 200, cp.body);
    const simple = (a: { user: string; role: string; tenant: string; resource_instance?: string | null }) =>
      `${a.user}|${a.role}|${a.tenant}|${a.resource_instance ?? ""}`;
    assert.deepEqual(all.map(simple).sort(), cp.json.map(simple).sort());
    for (const bad of ["?per_page=0", "?per_page=101", "?page=0", "?page=x", "?user=a&user=b"]) {
      const res = await raw(pdp.url, "GET", `/local/role_assignments${bad}`, key);
      assert.equal(res.status, 422, `${bad}: ${JSON.stringify(res.json)}`);
      assert.equal(res.json.error_code, "INVALID_INPUT");
    }
    assert.equal((await raw(pdp.url, "GET", "/local/role_assignments", "nope")).status, 401);
  });
});

describeEachDialect("proxy configs and POST /allowed_url (Permit's URL mapping rules)", (env) => {
  let pdp: TestPdp;
  let key = "";
  let otherKey = "";
  const S = "/v2/schema/default/production";
  const F = "/v2/facts/default/production";
  const P = `${F}/proxy_configs`;
  const API = "https://api.example.com";

  before(async () => {
    const { acme, globex, call } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    otherKey = (await call(globex.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(env());
    for (const k of [key, otherKey]) {
      const made = await call(k, "POST", `${S}/resources`, {
        key: "document",
        name: "Document",
        actions: { get: {}, read: {}, delete: {} },
      });
      assert.ok(made.status < 300, made.body);
    }
    assert.ok(
      (
        await call(key, "POST", `${S}/roles`, {
          key: "reader",
          name: "R",
          permissions: ["document:read", "document:get"],
        })
      ).status < 300,
    );
    assert.equal((await call(key, "POST", `${F}/users`, { key: "rob" })).status, 201);
    assert.equal(
      (await call(key, "POST", `${F}/role_assignments`, { user: "rob", role: "reader", tenant: "default" }))
        .status,
      200,
    );
  });

  after(async () => {
    await pdp?.close();
  });

  const url = (user: string, http_method: string, u: string, k = key) =>
    pdp.call(k, "/allowed_url", { user: { key: user }, http_method, url: u, tenant: "default" });

  test("rules are stored, read back in Permit's shape and decide URL checks through the PDP", async () => {
    const { call } = env();
    const created = await call(key, "POST", P, {
      key: "docs-api",
      name: "Docs API",
      secret: "s3cret",
      mapping_rules: [
        { url: `${API}/documents/{id}`, http_method: "get", resource: "document", action: "read" },
        { url: `${API}/documents/{id}`, http_method: "delete", resource: "document", action: "delete" },
        { url: `${API}/documents`, http_method: "get", resource: "document" },
        {
          url: "^https://api\\.example\\.com/v2/documents/(?P<doc>[0-9]+)$",
          url_type: "regex",
          http_method: "get",
          resource: "document",
          action: "read",
          priority: 5,
        },
      ],
    });
    assert.equal(created.status, 200, created.body);
    assert.equal(created.json.key, "docs-api");
    assert.equal(created.json.secret, "s3cret");
    assert.equal(created.json.auth_mechanism, "Bearer");
    assert.equal(created.json.mapping_rules[2].action, "get", "the action defaults to the method");
    assert.deepEqual((await call(key, "GET", `${P}/docs-api`)).json, created.json);
    assert.deepEqual((await call(key, "GET", P)).json, [created.json]);
    assert.deepEqual((await call(otherKey, "GET", P)).json, []);

    const allowed = await url("rob", "GET", `${API}/documents/42`);
    assert.equal(allowed.status, 200, allowed.body);
    assert.equal(allowed.json.allow, true);
    assert.equal(allowed.json.query.action, "read");
    assert.deepEqual(allowed.json.query.resource.attributes, { id: "42" });
    assert.equal((await url("rob", "GET", `${API}/documents`)).json.allow, true, "action defaulted to get");
    const regex = await url("rob", "GET", `${API}/v2/documents/7`);
    assert.equal(regex.json.allow, true, regex.body);
    assert.deepEqual(regex.json.query.resource.attributes, { doc: "7" });
    const denied = await url("rob", "DELETE", `${API}/documents/42`);
    assert.equal(denied.json.allow, false, "rob may not delete");
    const none = await url("rob", "POST", `${API}/documents/42`);
    assert.equal(none.status, 200);
    assert.equal(none.json.allow, false);
    assert.equal(none.json.debug.reason.code, "NO_MAPPING_RULE");
    assert.equal((await url("rob", "GET", `${API}/other/42`)).json.debug.reason.code, "NO_MAPPING_RULE");
    // The other organization's PDP holds none of these rules.
    assert.equal(
      (await url("rob", "GET", `${API}/documents/42`, otherKey)).json.debug.reason.code,
      "NO_MAPPING_RULE",
    );

    // An update's rule with should_delete removes the rule of its method and URL; the PDP follows.
    const updated = await call(key, "PATCH", `${P}/docs-api`, {
      mapping_rules: [
        { url: `${API}/documents/{id}`, http_method: "get", resource: "document", should_delete: true },
      ],
    });
    assert.equal(updated.status, 200, updated.body);
    assert.equal(updated.json.mapping_rules.length, 3);
    assert.equal((await url("rob", "GET", `${API}/documents/42`)).json.debug.reason.code, "NO_MAPPING_RULE");
    assert.equal((await call(key, "DELETE", `${P}/docs-api`)).status, 204);
    assert.equal((await url("rob", "GET", `${API}/documents`)).json.debug.reason.code, "NO_MAPPING_RULE");
    assert.equal((await call(key, "GET", `${P}/docs-api`)).status, 404);
  });

  test("a PDP that loads the environment afresh has the rules (snapshot)", async () => {
    const { call } = env();
    const created = await call(key, "POST", P, {
      key: "snap",
      name: "Snap",
      secret: { token: "t" },
      mapping_rules: [
        { url: `${API}/files/{f}?v={version}`, http_method: "get", resource: "document", action: "read" },
      ],
    });
    assert.equal(created.status, 200, created.body);
    const fresh = await startTestPdp(env());
    try {
      const ok = await fresh.call(key, "/allowed_url", {
        user: "rob",
        http_method: "GET",
        url: `${API}/files/a?v=3&x=1`,
        tenant: "default",
      });
      assert.equal(ok.json.allow, true, ok.body);
      assert.deepEqual(ok.json.query.resource.attributes, { f: "a", version: "3" });
      const noQuery = await fresh.call(key, "/allowed_url", {
        user: "rob",
        http_method: "GET",
        url: `${API}/files/a`,
        tenant: "default",
      });
      assert.equal(noQuery.json.debug.reason.code, "NO_MAPPING_RULE");
    } finally {
      await fresh.close();
    }
    assert.equal((await call(key, "DELETE", `${P}/snap`)).status, 204);
  });

  test("an environment copy takes the proxy configs along, and its PDP matches their rules", async () => {
    const { call, acme } = env();
    const rule = { url: `${API}/copied/{id}`, http_method: "get", resource: "document", action: "read" };
    assert.equal(
      (await call(key, "POST", P, { key: "cp", name: "Cp", secret: "s", mapping_rules: [rule] })).status,
      200,
    );
    const copied = await call(acme.adminKey, "POST", "/v2/projects/default/envs/production/copy", {
      target_env: { new: { key: "staging", name: "Staging" } },
    });
    assert.ok(copied.status < 300, copied.body);
    const there = await call(acme.adminKey, "GET", "/v2/facts/default/staging/proxy_configs/cp");
    assert.equal(there.status, 200, there.body);
    assert.deepEqual(there.json.mapping_rules, (await call(key, "GET", `${P}/cp`)).json.mapping_rules);
    assert.equal(there.json.environment_id, copied.json.id);
    const check = await pdp.call(
      acme.adminKey,
      "/allowed_url",
      { user: "rob", http_method: "GET", url: `${API}/copied/1`, tenant: "default" },
      { "x-gatehouse-environment": "default/staging" },
    );
    assert.equal(check.status, 200, check.body);
    assert.equal(check.json.query.action, "read", check.body);
    // Copying again into it: a proxy config with the same key is a conflict unless overwritten.
    const again = await call(acme.adminKey, "POST", "/v2/projects/default/envs/production/copy", {
      target_env: { existing: "staging" },
      conflict_strategy: "fail",
    });
    assert.equal(again.status, 409, again.body);
    assert.equal((await call(key, "DELETE", `${P}/cp`)).status, 204);
  });

  test("bad rules and bad URL checks are refused and change nothing", async () => {
    const { call } = env();
    const rule = { url: `${API}/x/{id}`, http_method: "get", resource: "document", action: "read" };
    const cases: [unknown, number][] = [
      [{ ...rule, url: `${API}/x/{id` }, 422],
      [{ ...rule, url: `${API}/x/a{id}` }, 422],
      [{ ...rule, url: "/relative/{id}" }, 422],
      [{ ...rule, url: "ftp://host/x" }, 422],
      [{ ...rule, url: "(unclosed", url_type: "regex" }, 422],
      [{ ...rule, url: "^https://api\\.example\\.com/(a+)+$", url_type: "regex" }, 422],
      [{ ...rule, http_method: "fetch" }, 422],
      [{ ...rule, resource: "nope" }, 404],
      [{ ...rule, action: "fly" }, 404],
      [{ url: rule.url, http_method: "post", resource: "document" }, 404],
      [{ ...rule, extra: 1 }, 422],
    ];
    for (const [bad, status] of cases) {
      const res = await call(key, "POST", P, { key: "bad", name: "Bad", secret: "s", mapping_rules: [bad] });
      assert.equal(res.status, status, `${JSON.stringify(bad)}: ${res.body}`);
      assert.ok(res.json.error_code, res.body);
    }
    assert.deepEqual((await call(key, "GET", P)).json, []);
    assert.equal((await call(key, "POST", P, { key: "dup", name: "D", secret: "s" })).status, 200);
    assert.equal((await call(key, "POST", P, { key: "dup", name: "D", secret: "s" })).status, 409);
    assert.equal(
      (await call(key, "PATCH", `${P}/dup`, { mapping_rules: [{ ...rule, resource: "nope" }] })).status,
      404,
    );
    assert.deepEqual((await call(key, "GET", `${P}/dup`)).json.mapping_rules, []);
    assert.equal((await call(key, "DELETE", `${P}/dup`)).status, 204);

    for (const body of [
      { user: "rob", http_method: "GET", url: "not a url", tenant: "default" },
      { user: "rob", http_method: "GET", url: "/relative", tenant: "default" },
      { user: "rob", url: `${API}/x`, tenant: "default" },
      { user: "rob", http_method: "GET", url: `${API}/x` },
      { http_method: "GET", url: `${API}/x`, tenant: "default" },
      { user: "rob", http_method: "GET", url: `${API}/x`, tenant: "default", context: "x" },
    ]) {
      const res = await pdp.call(key, "/allowed_url", body);
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(res.json.error_code, "INVALID_INPUT");
    }
    assert.equal((await pdp.call("nope", "/allowed_url", { user: "rob" })).status, 401);
  });
});
