import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertPermit,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  seedStandard,
  TIMESTAMP_RE,
} from "../helpers/facts.ts";

describeEachDialect("facts: users", (env) => {
  let F = "";
  let dev = "";
  before(async () => {
    await seedStandard(env());
    F = factsUrl(env().acme);
    dev = factsUrl(env().acme, "development");
  });

  test("an empty environment lists an empty page", async () => {
    const { acme, call } = env();
    const res = await call(acme.adminKey, "GET", `${dev}/users`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { data: [], total_count: 0, page_count: 0 });
    assertPermit("get", "/users", 200, res.json);
  });

  test("create with role assignments: 201, every field, deprecated roles filled, one revision", async () => {
    const e = env();
    const body = {
      key: "auth0|elon",
      email: "elon@example.com",
      first_name: "Elon",
      last_name: "Musk",
      attributes: { age: 50, tags: ["a"], nested: { ok: true } },
      role_assignments: [
        { role: "admin", tenant: "default" },
        { role: "editor", resource_instance: "document:plan", tenant: "default" },
      ],
    };
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/users`, body),
      [
        {
          kind: "user",
          op: "upsert",
          data: {
            key: "auth0|elon",
            email: "elon@example.com",
            first_name: "Elon",
            last_name: "Musk",
            attributes: body.attributes,
          },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "plan", tenant: "default", attributes: {} },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "auth0|elon", role: "admin", tenant: "default", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "auth0|elon", role: "editor", tenant: "default", resource_instance: "document:plan" },
        },
      ],
    );
    assert.equal(res.status, 201);
    const user = res.json;
    assert.deepEqual(Object.keys(user).sort(), [
      "associated_tenants",
      "attributes",
      "created_at",
      "email",
      "environment_id",
      "first_name",
      "id",
      "key",
      "last_name",
      "organization_id",
      "project_id",
      "roles",
      "updated_at",
    ]);
    assert.equal(user.key, "auth0|elon");
    assert.equal(user.organization_id, e.acme.id);
    assert.equal(user.project_id, e.acme.projectId);
    assert.equal(user.environment_id, e.acme.envs.production);
    assert.deepEqual(user.attributes, body.attributes);
    assert.equal(user.attributes.age, 50);
    assert.deepEqual(user.roles, [{ role: "admin", tenant: "default" }]);
    assert.deepEqual(user.associated_tenants, [{ tenant: "default", roles: ["admin"], status: "active" }]);
    assert.match(user.created_at, TIMESTAMP_RE);
    assert.match(user.updated_at, TIMESTAMP_RE);
    assertPermit("post", "/users", 200, user);
  });

  test("a user created with nothing but a key has {} attributes, [] tenants and no unset fields", async () => {
    const { acme, call } = env();
    const res = await call(acme.adminKey, "POST", `${F}/users`, { key: "bare" });
    assert.equal(res.status, 201);
    assert.deepEqual(res.json.attributes, {});
    assert.deepEqual(res.json.associated_tenants, []);
    assert.deepEqual(res.json.roles, []);
    for (const field of ["email", "first_name", "last_name"]) assert.equal(field in res.json, false, field);
    assertPermit("post", "/users", 200, res.json);
  });

  test("duplicate key: 409, nothing written", async () => {
    const e = env();
    const res = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/users`, { key: "bare", email: "x@example.com" }),
      409,
    );
    assert.equal(res.json.error_code, "DUPLICATE_ENTITY");
    assert.match(res.json.message, /bare/);
  });

  test("a key shaped like another user's id: 409, nothing written (a ref to it would name two users)", async () => {
    const e = env();
    const bare = await e.call(e.acme.adminKey, "GET", `${F}/users/bare`);
    assert.equal(bare.status, 200);
    const res = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/users`, { key: bare.json.id }),
      409,
    );
    assert.equal(res.json.error_code, "DUPLICATE_ENTITY");
  });

  test("a created user's answer is what a read of it answers, with and without role assignments", async () => {
    const e = env();
    for (const body of [
      { key: "answer-plain", first_name: "Plain" },
      { key: "answer-roles", role_assignments: [{ role: "admin", tenant: "default" }] },
    ]) {
      const created = await e.call(e.acme.adminKey, "POST", `${F}/users`, body);
      assert.equal(created.status, 201, created.body);
      const read = await e.call(e.acme.adminKey, "GET", `${F}/users/${body.key}`);
      assert.deepEqual(created.json, read.json);
      assert.equal((await e.call(e.acme.adminKey, "DELETE", `${F}/users/${body.key}`)).status, 204);
    }
  });

  test("invalid key, email or body: 422, nothing written", async () => {
    const e = env();
    for (const body of [
      { key: "has space" },
      { key: "slash/no" },
      { key: "" },
      { key: "ok", email: "not-an-email" },
      { key: "ok", attributes: "nope" },
      { email: "a@example.com" },
    ]) {
      const res = await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/users`, body),
        422,
      );
      assert.equal(res.json.error_code, "INVALID_INPUT");
      assert.ok(Array.isArray(res.json.detail));
    }
  });

  test("unknown role, tenant or resource in role_assignments: 404 naming it, the user is not created", async () => {
    const e = env();
    const cases: [Record<string, string>, RegExp][] = [
      [{ role: "nope", tenant: "default" }, /role 'nope'/],
      [{ role: "admin", tenant: "nowhere" }, /tenant 'nowhere'/],
      [{ role: "editor", resource_instance: "spaceship:x", tenant: "default" }, /resource 'spaceship'/],
      [{ role: "captain", resource_instance: "document:x", tenant: "default" }, /role 'captain'.*document/],
      [{ role: "editor", resource_instance: "document:never" }, /resource instance 'document:never'/],
    ];
    for (const [assignment, message] of cases) {
      const res = await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/users`, { key: "ghost", role_assignments: [assignment] }),
        404,
      );
      assert.equal(res.json.error_code, "NOT_FOUND");
      assert.match(res.json.message, message);
    }
    const missingTenant = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/users`, {
          key: "ghost",
          role_assignments: [{ role: "admin" }],
        }),
      422,
    );
    assert.match(missingTenant.json.message, /tenant is required/);
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/users/ghost`)).status, 404);
  });

  test("get by key (URL-encoded) and by id; unknown: 404", async () => {
    const { acme, call } = env();
    const byKey = await call(acme.adminKey, "GET", `${F}/users/${encodeURIComponent("auth0|elon")}`);
    assert.equal(byKey.status, 200);
    assertPermit("get", "/users/{user_id}", 200, byKey.json);
    const byId = await call(acme.adminKey, "GET", `${F}/users/${byKey.json.id}`);
    assert.deepEqual(byId.json, byKey.json);
    const missing = await call(acme.adminKey, "GET", `${F}/users/nobody`);
    assert.equal(missing.status, 404);
    assert.match(missing.json.message, /user 'nobody'/);
  });

  test("PUT creates with 201, replaces with 200 (left-out fields cleared), and checks the key", async () => {
    const e = env();
    const created = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PUT", `${F}/users/synced`, {
          key: "synced",
          email: "s@example.com",
          first_name: "Syn",
          attributes: { plan: "pro" },
        }),
      [
        {
          kind: "user",
          op: "upsert",
          data: {
            key: "synced",
            email: "s@example.com",
            first_name: "Syn",
            last_name: null,
            attributes: { plan: "pro" },
          },
        },
      ],
    );
    assert.equal(created.status, 201);
    assertPermit("put", "/users/{user_id}", 201, created.json);
    const replaced = await e.call(e.acme.adminKey, "PUT", `${F}/users/synced`, {
      key: "synced",
      last_name: "Ced",
      role_assignments: [{ role: "viewer", tenant: "default" }],
    });
    assert.equal(replaced.status, 200);
    assertPermit("put", "/users/{user_id}", 200, replaced.json);
    assert.equal(replaced.json.id, created.json.id);
    assert.equal(replaced.json.last_name, "Ced");
    assert.equal("email" in replaced.json, false);
    assert.equal("first_name" in replaced.json, false);
    assert.deepEqual(replaced.json.attributes, {});
    assert.deepEqual(replaced.json.roles, [{ role: "viewer", tenant: "default" }]);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PUT", `${F}/users/synced`, { key: "other" }),
      422,
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PUT", `${F}/users/bad%20key`, {}),
      422,
    );
  });

  test("PATCH changes only the fields it names", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PATCH", `${F}/users/auth0%7Celon`, { first_name: "E." }),
      [
        {
          kind: "user",
          op: "upsert",
          data: {
            key: "auth0|elon",
            email: "elon@example.com",
            first_name: "E.",
            last_name: "Musk",
            attributes: { age: 50, tags: ["a"], nested: { ok: true } },
          },
        },
      ],
    );
    assert.equal(res.json.first_name, "E.");
    assert.equal(res.json.email, "elon@example.com");
    assertPermit("patch", "/users/{user_id}", 200, res.json);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PATCH", `${F}/users/nobody`, { first_name: "x" }),
      404,
    );
  });

  test("pagination: per_page bounds, page_count, a page past the end", async () => {
    const { acme, call } = env();
    for (let i = 0; i < 5; i++) {
      assert.equal((await call(acme.adminKey, "POST", `${dev}/users`, { key: `page-${i}` })).status, 201);
    }
    const first = await call(acme.adminKey, "GET", `${dev}/users?page=1&per_page=2`);
    assert.deepEqual(
      first.json.data.map((u: { key: string }) => u.key),
      ["page-0", "page-1"],
    );
    assert.equal(first.json.total_count, 5);
    assert.equal(first.json.page_count, 3);
    const last = await call(acme.adminKey, "GET", `${dev}/users?page=3&per_page=2`);
    assert.deepEqual(
      last.json.data.map((u: { key: string }) => u.key),
      ["page-4"],
    );
    const past = await call(acme.adminKey, "GET", `${dev}/users?page=9&per_page=2`);
    assert.deepEqual(past.json, { data: [], total_count: 5, page_count: 3 });
    assertPermit("get", "/users", 200, past.json);
    const all = await call(acme.adminKey, "GET", `${dev}/users`);
    assert.equal(all.json.data.length, 5);
    assert.equal(all.json.page_count, 1);
    assert.equal((await call(acme.adminKey, "GET", `${dev}/users?per_page=100`)).status, 200);
    for (const q of ["per_page=101", "per_page=0", "page=0", "per_page=abc"]) {
      const res = await call(acme.adminKey, "GET", `${dev}/users?${q}`);
      assert.equal(res.status, 422, q);
      assert.equal(res.json.error_code, "INVALID_INPUT");
    }
  });

  test("search (contains, startswith, endswith) and role filters", async () => {
    const { acme, call } = env();
    const keys = async (q: string) => {
      const res = await call(acme.adminKey, "GET", `${F}/users?${q}`);
      assert.equal(res.status, 200, String(res.body));
      assert.equal(res.json.total_count, res.json.data.length);
      return res.json.data.map((u: { key: string }) => u.key).sort();
    };
    assert.deepEqual(await keys("search=ELON"), ["auth0|elon"]);
    assert.deepEqual(await keys("search=example.com"), ["auth0|elon"]);
    assert.deepEqual(await keys("search=syn&search_operator=startswith"), ["synced"]);
    assert.deepEqual(await keys("search=ced&search_operator=endswith"), ["synced"]);
    assert.deepEqual(await keys("search=nced"), ["synced"]);
    assert.deepEqual(await keys("search=nced&search_operator=startswith"), []);
    assert.deepEqual(await keys("search=%25"), []);
    assert.deepEqual(await keys("role=admin"), ["auth0|elon"]);
    assert.deepEqual(await keys("role=viewer"), ["synced"]);
    assert.deepEqual(await keys("role=editor"), []);
    assert.deepEqual(await keys("role=editor&include_resource_instance_roles=true"), ["auth0|elon"]);
    assert.deepEqual(await keys("role="), ["bare"]);
    const detailed = await call(
      acme.adminKey,
      "GET",
      `${F}/users?role=admin&include_resource_instance_roles=true`,
    );
    assert.deepEqual(detailed.json.data[0].associated_tenants, [
      {
        tenant: "default",
        roles: ["admin"],
        status: "active",
        resource_instance_roles: [{ resource_instance: "plan", resource: "document", role: "editor" }],
      },
    ]);
    assertPermit("get", "/users", 200, detailed.json);
    assert.equal((await call(acme.adminKey, "GET", `${F}/users?search_operator=like`)).status, 422);
  });

  test("assign and unassign through /users/{id}/roles", async () => {
    const e = env();
    const url = `${F}/users/bare/roles`;
    const assigned = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", url, { role: "auditor", tenant: "default" }),
      [
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "bare", role: "auditor", tenant: "default", resource_instance: null },
        },
      ],
    );
    assert.equal(assigned.status, 200);
    assertPermit("post", "/users/{user_id}/roles", 200, assigned.json);
    assert.equal(assigned.json.user, "bare");
    assert.equal(assigned.json.role, "auditor");
    assert.equal(assigned.json.tenant, "default");
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", url, { role: "auditor", tenant: "default" }),
      409,
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/users/nobody/roles`, { role: "auditor", tenant: "default" }),
      404,
    );
    const removed = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${url}?return_deleted=true`, {
          role: "auditor",
          tenant: "default",
        }),
      [
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "bare", role: "auditor", tenant: "default", resource_instance: null },
        },
      ],
    );
    assert.equal(removed.status, 200);
    assert.equal(removed.json.id, assigned.json.id);
    assertPermit("delete", "/users/{user_id}/roles", 200, removed.json);
    const again = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", url, { role: "auditor", tenant: "default" }),
      404,
    );
    assert.match(again.json.message, /does not have role 'auditor'/);
    await e.call(e.acme.adminKey, "POST", url, { role: "auditor", tenant: "default" });
    const plain = await e.call(e.acme.adminKey, "DELETE", url, { role: "auditor", tenant: "default" });
    assert.equal(plain.status, 204);
    assert.equal(plain.body, "");
  });

  test("delete: 204, the user's role assignments go too, the feed says so", async () => {
    const e = env();
    const user = (await e.call(e.acme.adminKey, "GET", `${F}/users/auth0%7Celon`)).json;
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/users/${user.id}`),
      [{ kind: "user", op: "delete", data: { key: "auth0|elon" } }],
    );
    assert.equal(res.status, 204);
    const left = await e.store.db
      .selectFrom("role_assignments")
      .select("id")
      .where("user_id", "=", user.id)
      .execute();
    assert.deepEqual(left, []);
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/users/${user.id}`)).status, 404);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/users/${user.id}`),
      404,
    );
  });

  test("keys: a read-only key lists but cannot write; another environment's key gets 403", async () => {
    const { acme, call } = env();
    const key = async (environment: string, access: string) => {
      const res = await call(acme.adminKey, "POST", "/v2/api-key", {
        object_type: "env",
        project_id: acme.projectId,
        environment_id: environment,
        access_level: access,
      });
      assert.equal(res.status, 200, String(res.body));
      return res.json.secret as string;
    };
    const reader = await key(acme.envs.production, "read");
    assert.equal((await call(reader, "GET", `${F}/users`)).status, 200);
    assert.equal((await call(reader, "GET", `${F}/users/bare`)).status, 200);
    assert.equal((await call(reader, "POST", `${F}/users`, { key: "by-reader" })).status, 403);
    assert.equal((await call(reader, "DELETE", `${F}/users/bare`)).status, 403);
    const devWriter = await key(acme.envs.development, "write");
    assert.equal((await call(devWriter, "GET", `${F}/users`)).status, 403);
    assert.equal((await call(devWriter, "POST", `${F}/users`, { key: "by-dev" })).status, 403);
    assert.equal((await call(null, "GET", `${F}/users`)).status, 401);
    assert.equal((await call(acme.adminKey, "GET", `${F}/users/by-reader`)).status, 404);
  });

  test("environments and organizations do not see each other's users", async () => {
    const { acme, globex, call } = env();
    assert.equal(
      (await call(globex.adminKey, "POST", `${factsUrl(globex)}/users`, { key: "bare" })).status,
      201,
    );
    const acmeDev = await call(acme.adminKey, "GET", `${dev}/users?per_page=100`);
    assert.equal(
      acmeDev.json.data.some((u: { key: string }) => u.key === "bare" || u.key === "synced"),
      false,
    );
    const globexList = await call(globex.adminKey, "GET", `${factsUrl(globex)}/users`);
    assert.deepEqual(
      globexList.json.data.map((u: { key: string }) => u.key),
      ["bare"],
    );
    assert.equal(globexList.json.data[0].environment_id, globex.envs.production);
    assert.equal((await call(acme.adminKey, "GET", `${dev}/users/synced`)).status, 404);
    // Another organization's key does not reach acme's project at all.
    for (const [method, url] of [
      ["GET", `${F}/users`],
      ["GET", `${F}/users/synced`],
      ["POST", `${F}/users`],
      ["DELETE", `${F}/users/synced`],
    ] as const) {
      const res = await call(
        globex.adminKey,
        method,
        url,
        method === "POST" ? { key: "intruder" } : undefined,
      );
      assert.ok(res.status === 404 || res.status === 403, `${method} ${url}: ${res.status}`);
    }
    assert.equal((await call(acme.adminKey, "GET", `${F}/users/synced`)).status, 200);
  });
});
