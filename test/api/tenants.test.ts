import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { validatePermitResponse } from "../helpers/permit-contract.ts";
import {
  assertPermit,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  permitPath,
  seedStandard,
  TIMESTAMP_RE,
} from "../helpers/facts.ts";

describeEachDialect("facts: tenants", (env) => {
  let F = "";
  before(async () => {
    await seedStandard(env());
    F = factsUrl(env().acme);
  });

  test("a new environment lists its default tenant, as an array or, with include_total_count, an envelope", async () => {
    const { acme, call } = env();
    const list = await call(acme.adminKey, "GET", `${F}/tenants`);
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.json));
    assert.deepEqual(
      list.json.map((t: { key: string }) => t.key),
      ["default"],
    );
    assert.equal(list.json[0].name, "Default Tenant");
    assert.equal(list.json[0].attributes, null);
    const page = await call(acme.adminKey, "GET", `${F}/tenants?include_total_count=true`);
    assert.deepEqual(Object.keys(page.json).sort(), ["data", "page_count", "total_count"]);
    assert.equal(page.json.total_count, 1);
    assert.equal(page.json.page_count, 1);
  });

  test("create without attributes: 201, attributes null, no description; with them: both shown", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/tenants`, { key: "stripe-inc", name: "Stripe Inc" }),
      [{ kind: "tenant", op: "upsert", data: { key: "stripe-inc", attributes: {} } }],
    );
    assert.equal(res.status, 201);
    const t = res.json;
    assert.deepEqual(Object.keys(t).sort(), [
      "attributes",
      "created_at",
      "environment_id",
      "id",
      "key",
      "last_action_at",
      "name",
      "organization_id",
      "project_id",
      "updated_at",
    ]);
    assert.equal(t.attributes, null);
    assert.equal(t.environment_id, e.acme.envs.production);
    for (const field of ["created_at", "updated_at", "last_action_at"]) assert.match(t[field], TIMESTAMP_RE);
    // The one deliberate difference from Permit's schema (docs/compatibility.md): attributes is null here.
    assert.deepEqual(validatePermitResponse("post", permitPath("/tenants"), 200, t), [
      "/attributes must be object",
    ]);

    const full = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/tenants`, {
          key: "globo_corp",
          name: "Globo",
          description: "a customer",
          attributes: { allowed_locations: ["US", "CA"], seats: 10 },
        }),
      [
        {
          kind: "tenant",
          op: "upsert",
          data: { key: "globo_corp", attributes: { allowed_locations: ["US", "CA"], seats: 10 } },
        },
      ],
    );
    assert.equal(full.json.description, "a customer");
    assert.deepEqual(full.json.attributes, { allowed_locations: ["US", "CA"], seats: 10 });
    assertPermit("post", "/tenants", 200, full.json);
  });

  test("duplicate key: 409; a key outside the pattern or a missing name: 422; nothing written", async () => {
    const e = env();
    const dup = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/tenants`, { key: "stripe-inc", name: "Again" }),
      409,
    );
    assert.match(dup.json.message, /stripe-inc/);
    for (const body of [
      { key: "has space", name: "x" },
      { key: "a:b", name: "x" },
      { key: "dot.ted", name: "x" },
      { key: "ok" },
    ]) {
      await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/tenants`, body),
        422,
      );
    }
  });

  test("get by key or id, patch, 404 for an unknown tenant", async () => {
    const e = env();
    const byKey = await e.call(e.acme.adminKey, "GET", `${F}/tenants/globo_corp`);
    assert.equal(byKey.status, 200);
    assertPermit("get", "/tenants/{tenant_id}", 200, byKey.json);
    const byId = await e.call(e.acme.adminKey, "GET", `${F}/tenants/${byKey.json.id}`);
    assert.deepEqual(byId.json, byKey.json);
    const patched = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PATCH", `${F}/tenants/globo_corp`, {
          name: "Globo Corp",
          attributes: { seats: 20 },
        }),
      [{ kind: "tenant", op: "upsert", data: { key: "globo_corp", attributes: { seats: 20 } } }],
    );
    assert.equal(patched.json.name, "Globo Corp");
    assert.equal(patched.json.description, "a customer");
    assert.deepEqual(patched.json.attributes, { seats: 20 });
    assertPermit("patch", "/tenants/{tenant_id}", 200, patched.json);
    const missing = await e.call(e.acme.adminKey, "GET", `${F}/tenants/nowhere`);
    assert.equal(missing.status, 404);
    assert.match(missing.json.message, /tenant 'nowhere'/);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PATCH", `${F}/tenants/nowhere`, { name: "x" }),
      404,
    );
  });

  test("search, pagination bounds and a page past the end", async () => {
    const { acme, call } = env();
    const keys = async (q: string) =>
      (await call(acme.adminKey, "GET", `${F}/tenants?${q}`)).json.map((t: { key: string }) => t.key).sort();
    assert.deepEqual(await keys("search=GLOBO"), ["globo_corp"]);
    assert.deepEqual(await keys("search=stripe"), ["stripe-inc"]);
    assert.deepEqual(await keys("search=default%20ten"), ["default"]);
    const page = await call(acme.adminKey, "GET", `${F}/tenants?include_total_count=true&per_page=2&page=2`);
    assert.equal(page.json.total_count, 3);
    assert.equal(page.json.page_count, 2);
    assert.equal(page.json.data.length, 1);
    assertPermit("get", "/tenants", 200, {
      ...page.json,
      data: page.json.data.filter((t: { attributes: unknown }) => t.attributes !== null),
    });
    const past = await call(acme.adminKey, "GET", `${F}/tenants?include_total_count=true&per_page=2&page=5`);
    assert.deepEqual(past.json, { data: [], total_count: 3, page_count: 2 });
    assert.deepEqual((await call(acme.adminKey, "GET", `${F}/tenants?page=5`)).json, []);
    assert.equal((await call(acme.adminKey, "GET", `${F}/tenants?per_page=101`)).status, 422);
    assert.equal((await call(acme.adminKey, "GET", `${F}/tenants?per_page=100`)).status, 200);
  });

  test("tenant users: add with roles, list (always paginated), remove the user's roles in that tenant only", async () => {
    const e = env();
    const added = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/tenants/stripe-inc/users`, {
          key: "jane",
          email: "jane@stripe.com",
          role_assignments: [{ role: "admin" }, { role: "editor", resource_instance: "document:spec" }],
        }),
      [
        {
          kind: "user",
          op: "upsert",
          data: { key: "jane", email: "jane@stripe.com", first_name: null, last_name: null, attributes: {} },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "spec", tenant: "stripe-inc", attributes: {} },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "jane", role: "admin", tenant: "stripe-inc", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "jane", role: "editor", tenant: "stripe-inc", resource_instance: "document:spec" },
        },
      ],
    );
    assert.equal(added.status, 200);
    assertPermit("post", "/tenants/{tenant_id}/users", 200, added.json);
    assert.deepEqual(added.json.associated_tenants, [
      { tenant: "stripe-inc", roles: ["admin"], status: "active" },
    ]);
    // An existing user: the profile is kept unless named, the roles are added.
    const again = await e.call(e.acme.adminKey, "POST", `${F}/tenants/globo_corp/users`, {
      key: "jane",
      role_assignments: [{ role: "viewer", tenant: "globo_corp" }],
    });
    assert.equal(again.status, 200);
    assert.equal(again.json.email, "jane@stripe.com");
    assert.deepEqual(
      again.json.associated_tenants.map((t: { tenant: string }) => t.tenant),
      ["stripe-inc", "globo_corp"],
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/tenants/globo_corp/users`, {
          key: "newbie",
          role_assignments: [{ role: "viewer", tenant: "stripe-inc" }],
        }),
      422,
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/tenants/nowhere/users`, { key: "newbie" }),
      404,
    );

    const list = await e.call(e.acme.adminKey, "GET", `${F}/tenants/stripe-inc/users`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.json.data.map((u: { key: string }) => u.key),
      ["jane"],
    );
    assert.equal(list.json.total_count, 1);
    assert.equal(list.json.page_count, 1);
    assertPermit("get", "/tenants/{tenant_id}/users", 200, list.json);
    const empty = await e.call(e.acme.adminKey, "GET", `${F}/tenants/default/users?role=admin`);
    assert.deepEqual(empty.json, { data: [], total_count: 0, page_count: 0 });
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/tenants/stripe-inc/users?role=viewer`)).json.total_count,
      0,
    );
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/tenants/stripe-inc/users?role=admin`)).json.total_count,
      1,
    );
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/tenants/stripe-inc/users?per_page=101`)).status,
      422,
    );
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/tenants/nowhere/users`)).status, 404);

    const removed = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/tenants/stripe-inc/users/jane`),
      [
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "jane", role: "admin", tenant: "stripe-inc", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "jane", role: "editor", tenant: "stripe-inc", resource_instance: "document:spec" },
        },
      ],
    );
    assert.equal(removed.status, 204);
    const jane = (await e.call(e.acme.adminKey, "GET", `${F}/users/jane`)).json;
    assert.deepEqual(jane.associated_tenants, [
      { tenant: "globo_corp", roles: ["viewer"], status: "active" },
    ]);
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/tenants/stripe-inc/users`)).json.total_count, 0);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/tenants/stripe-inc/users/nobody`),
      404,
    );
  });

  test("delete cascades to the tenant's assignments, instances and tuples, and leaves other tenants alone", async () => {
    const e = env();
    const call = (method: "POST" | "GET", url: string, body?: unknown) =>
      e.call(e.acme.adminKey, method, url, body);
    assert.equal((await call("POST", `${F}/tenants`, { key: "doomed", name: "Doomed" })).status, 201);
    assert.equal(
      (
        await call("POST", `${F}/relationship_tuples`, {
          subject: "folder:d-root",
          relation: "parent",
          object: "document:d-doc",
          tenant: "doomed",
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await call("POST", `${F}/users`, {
          key: "doomed-user",
          role_assignments: [
            { role: "admin", tenant: "doomed" },
            { role: "viewer", tenant: "globo_corp" },
            { role: "editor", resource_instance: "document:d-doc" },
          ],
        })
      ).status,
      201,
    );
    const tenantId = (await call("GET", `${F}/tenants/doomed`)).json.id;
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/tenants/doomed`),
      [
        { kind: "resource_instance", op: "delete", data: { resource: "folder", key: "d-root" } },
        { kind: "resource_instance", op: "delete", data: { resource: "document", key: "d-doc" } },
        { kind: "tenant", op: "delete", data: { key: "doomed" } },
      ],
    );
    assert.equal(res.status, 204);
    for (const table of ["role_assignments", "resource_instances", "relationship_tuples"] as const) {
      const rows = await e.store.db
        .selectFrom(table)
        .select("id")
        .where("tenant_id", "=", tenantId)
        .execute();
      assert.deepEqual(rows, [], table);
    }
    const user = (await call("GET", `${F}/users/doomed-user`)).json;
    assert.deepEqual(user.associated_tenants, [
      { tenant: "globo_corp", roles: ["viewer"], status: "active" },
    ]);
    assert.equal((await call("GET", `${F}/tenants/doomed`)).status, 404);
    assert.equal((await call("GET", `${F}/tenants/globo_corp`)).status, 200);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/tenants/doomed`),
      404,
    );
  });

  test("environments and organizations do not see each other's tenants", async () => {
    const { acme, globex, call } = env();
    const dev = await call(acme.adminKey, "GET", `${factsUrl(acme, "development")}/tenants`);
    assert.deepEqual(
      dev.json.map((t: { key: string }) => t.key),
      ["default"],
    );
    assert.equal(
      (await call(acme.adminKey, "GET", `${factsUrl(acme, "development")}/tenants/globo_corp`)).status,
      404,
    );
    const other = await call(globex.adminKey, "GET", `${factsUrl(globex)}/tenants?include_total_count=true`);
    assert.equal(other.json.total_count, 1);
    assert.equal(other.json.data[0].environment_id, globex.envs.production);
    const crossing = await call(globex.adminKey, "GET", `${F}/tenants/globo_corp`);
    assert.ok(crossing.status === 403 || crossing.status === 404);
    const tenantId = (await call(acme.adminKey, "GET", `${F}/tenants/globo_corp`)).json.id;
    assert.equal((await call(globex.adminKey, "GET", `${factsUrl(globex)}/tenants/${tenantId}`)).status, 404);
  });
});
