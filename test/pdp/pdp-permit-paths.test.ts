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
    assert.deepEqual(await local("?role=viewer&per_page=1&page=2"), [
      { user: "ann", role: "viewer", tenant: "t2" },
    ]);
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
