import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { assertPermit, expectFeed, expectNothingWritten, factsUrl, seedStandard } from "../helpers/facts.ts";

describeEachDialect("facts: bulk operations", (env) => {
  let F = "";
  before(async () => {
    await seedStandard(env());
    F = factsUrl(env().acme);
  });

  const userRecord = (key: string, extra: Record<string, unknown> = {}) => ({
    kind: "user",
    op: "upsert",
    data: { key, email: null, first_name: null, last_name: null, attributes: {}, ...extra },
  });

  test("POST bulk/users creates every user (with role assignments) in one revision; result {}", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/bulk/users`, {
          operations: [
            { key: "u1", email: "u1@example.com" },
            { key: "u2", role_assignments: [{ role: "viewer", tenant: "default" }] },
            { key: "u3", attributes: { level: 3 } },
          ],
        }),
      [
        userRecord("u1", { email: "u1@example.com" }),
        userRecord("u2"),
        userRecord("u3", { attributes: { level: 3 } }),
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "u2", role: "viewer", tenant: "default", resource_instance: null },
        },
      ],
    );
    assert.deepEqual(res.json, {});
    assertPermit("post", "/bulk/users", 200, res.json);
    const list = await e.call(e.acme.adminKey, "GET", `${F}/users`);
    assert.deepEqual(list.json.data.map((u: { key: string }) => u.key).sort(), ["u1", "u2", "u3"]);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/users/u2`)).json.roles, [
      { role: "viewer", tenant: "default" },
    ]);
  });

  test("POST bulk/users is all or nothing: an existing key (409), a repeated key, a bad role or key (404/422)", async () => {
    const e = env();
    const cases: [unknown[], number][] = [
      [[{ key: "u4" }, { key: "u1" }], 409],
      [[{ key: "u4" }, { key: "u4" }], 422],
      [[{ key: "u4" }, { key: "u5", role_assignments: [{ role: "nope", tenant: "default" }] }], 404],
      [[{ key: "u4" }, { key: "bad key" }], 422],
    ];
    for (const [operations, status] of cases) {
      await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/bulk/users`, { operations }),
        status,
      );
    }
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/users/u4`)).status, 404);
  });

  test("PUT bulk/users creates or replaces; one revision", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PUT", `${F}/bulk/users`, {
          operations: [
            { key: "u1", first_name: "One" },
            { key: "u6", email: "u6@example.com", role_assignments: [{ role: "admin", tenant: "default" }] },
          ],
        }),
      [
        userRecord("u1", { first_name: "One" }),
        userRecord("u6", { email: "u6@example.com" }),
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "u6", role: "admin", tenant: "default", resource_instance: null },
        },
      ],
    );
    assert.deepEqual(res.json, {});
    assertPermit("put", "/bulk/users", 200, res.json);
    const u1 = (await e.call(e.acme.adminKey, "GET", `${F}/users/u1`)).json;
    assert.equal(u1.first_name, "One");
    assert.equal("email" in u1, false);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/users/u6`)).json.roles, [
      { role: "admin", tenant: "default" },
    ]);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PUT", `${F}/bulk/users`, {
          operations: [
            { key: "u7" },
            { key: "u1", role_assignments: [{ role: "admin", tenant: "nowhere" }] },
          ],
        }),
      404,
    );
  });

  test("DELETE bulk/users deletes them (with their roles); one unknown user deletes none", async () => {
    const e = env();
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/bulk/users`, { idents: ["u1", "ghost"] }),
      404,
    );
    const u3 = (await e.call(e.acme.adminKey, "GET", `${F}/users/u3`)).json;
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/bulk/users`, { idents: ["u1", "u6", u3.id] }),
      ["u1", "u6", "u3"].map((key) => ({ kind: "user", op: "delete", data: { key } })),
    );
    assert.deepEqual(res.json, {});
    assertPermit("delete", "/bulk/users", 200, res.json);
    assert.deepEqual(
      (await e.call(e.acme.adminKey, "GET", `${F}/users`)).json.data.map((u: { key: string }) => u.key),
      ["u2"],
    );
    assert.deepEqual(
      (await e.call(e.acme.adminKey, "GET", `${F}/role_assignments?tenant=default&role=admin`)).json,
      [],
    );
  });

  test("POST and DELETE bulk/tenants", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/bulk/tenants`, {
          operations: [
            { key: "bt1", name: "BT1" },
            { key: "bt2", name: "BT2", attributes: { region: "eu" } },
          ],
        }),
      [
        { kind: "tenant", op: "upsert", data: { key: "bt1", attributes: {} } },
        { kind: "tenant", op: "upsert", data: { key: "bt2", attributes: { region: "eu" } } },
      ],
    );
    assert.deepEqual(res.json, {});
    assertPermit("post", "/bulk/tenants", 200, res.json);
    for (const [operations, status] of [
      [
        [
          { key: "bt3", name: "x" },
          { key: "bt1", name: "x" },
        ],
        409,
      ],
      [
        [
          { key: "bt3", name: "x" },
          { key: "bt3", name: "y" },
        ],
        409,
      ],
      [
        [
          { key: "bt3", name: "x" },
          { key: "bad key", name: "y" },
        ],
        422,
      ],
    ] as const) {
      await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/bulk/tenants`, { operations }),
        status,
      );
    }
    assert.equal(
      (
        await e.call(e.acme.adminKey, "POST", `${F}/resource_instances`, {
          key: "in-bt1",
          resource: "folder",
          tenant: "bt1",
        })
      ).status,
      201,
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/bulk/tenants`, { idents: ["bt1", "nowhere"] }),
      404,
    );
    const deleted = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/bulk/tenants`, { idents: ["bt1", "bt2"] }),
      [
        { kind: "resource_instance", op: "delete", data: { resource: "folder", key: "in-bt1" } },
        { kind: "tenant", op: "delete", data: { key: "bt1" } },
        { kind: "tenant", op: "delete", data: { key: "bt2" } },
      ],
    );
    assert.deepEqual(deleted.json, {});
    assertPermit("delete", "/bulk/tenants", 200, deleted.json);
    assert.deepEqual(
      (await e.call(e.acme.adminKey, "GET", `${F}/tenants`)).json.map((t: { key: string }) => t.key),
      ["default"],
    );
  });

  test("PUT and DELETE bulk/resource_instances", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PUT", `${F}/bulk/resource_instances`, {
          operations: [
            { key: "f1", resource: "folder", tenant: "default" },
            { key: "d1", resource: "document", tenant: "default", attributes: { v: 1 } },
          ],
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "folder", key: "f1", tenant: "default", attributes: {} },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "d1", tenant: "default", attributes: { v: 1 } },
        },
      ],
    );
    assert.deepEqual(res.json, {});
    assertPermit("put", "/bulk/resource_instances", 200, res.json);
    const again = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PUT", `${F}/bulk/resource_instances`, {
          operations: [{ key: "d1", resource: "document", tenant: "default", attributes: { v: 2 } }],
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "d1", tenant: "default", attributes: { v: 2 } },
        },
      ],
    );
    assert.deepEqual(again.json, {});
    assert.deepEqual(
      (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Ad1`)).json.attributes,
      { v: 2 },
    );
    assert.equal(
      (await e.call(e.acme.adminKey, "POST", `${F}/tenants`, { key: "elsewhere", name: "E" })).status,
      201,
    );
    for (const [operations, status] of [
      [
        [
          { key: "f2", resource: "folder", tenant: "default" },
          { key: "x", resource: "starship", tenant: "default" },
        ],
        404,
      ],
      [
        [
          { key: "f2", resource: "folder", tenant: "default" },
          { key: "x", resource: "folder", tenant: "nowhere" },
        ],
        404,
      ],
      [
        [
          { key: "f2", resource: "folder", tenant: "default" },
          { key: "d1", resource: "document", tenant: "elsewhere" },
        ],
        422,
      ],
      [
        [
          { key: "f2", resource: "folder", tenant: "default" },
          { key: "f2", resource: "folder", tenant: "default" },
        ],
        422,
      ],
    ] as const) {
      await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "PUT", `${F}/bulk/resource_instances`, { operations }),
        status,
      );
    }
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${F}/bulk/resource_instances`, {
          idents: ["folder:f1", "folder:ghost"],
        }),
      404,
    );
    const d1 = (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Ad1`)).json;
    const deleted = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${F}/bulk/resource_instances`, { idents: ["folder:f1", d1.id] }),
      [
        { kind: "resource_instance", op: "delete", data: { resource: "folder", key: "f1" } },
        { kind: "resource_instance", op: "delete", data: { resource: "document", key: "d1" } },
      ],
    );
    assert.deepEqual(deleted.json, {});
    assertPermit("delete", "/bulk/resource_instances", 200, deleted.json);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/resource_instances`)).json, []);
  });

  test("bulk bodies are bounded, and other environments are untouched", async () => {
    const { acme, globex, call } = env();
    const operations = Array.from({ length: 1001 }, (_, i) => ({ key: `many-${i}` }));
    assert.equal((await call(acme.adminKey, "POST", `${F}/bulk/users`, { operations })).status, 422);
    const big = Array.from({ length: 600 }, (_, i) => ({ key: `big-${i}` }));
    assert.equal(
      (await call(acme.adminKey, "POST", `${factsUrl(acme, "development")}/bulk/users`, { operations: big }))
        .status,
      200,
    );
    const dev = await call(acme.adminKey, "GET", `${factsUrl(acme, "development")}/users?per_page=1`);
    assert.equal(dev.json.total_count, 600);
    assert.equal(dev.json.page_count, 600);
    assert.equal((await call(acme.adminKey, "GET", `${F}/users`)).json.total_count, 1);
    assert.equal((await call(globex.adminKey, "GET", `${factsUrl(globex)}/users`)).json.total_count, 0);
    const crossing = await call(globex.adminKey, "POST", `${F}/bulk/users`, {
      operations: [{ key: "intruder" }],
    });
    assert.ok(crossing.status === 403 || crossing.status === 404);
  });
});
