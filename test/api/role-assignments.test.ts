import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertPermit,
  changesAfter,
  expectEachRejected,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  revisionOf,
  seedStandard,
} from "../helpers/facts.ts";
import { purgeExpiredAssignments } from "../../src/modules/role-assignments/role-assignments.service.ts";

describeEachDialect("facts: role assignments", (env) => {
  let F = "";
  before(async () => {
    const e = env();
    await seedStandard(e);
    F = factsUrl(e.acme);
    const post = async (url: string, body: unknown) => {
      const res = await e.call(e.acme.adminKey, "POST", `${F}${url}`, body);
      assert.ok(res.status < 300, String(res.body));
    };
    await post("/tenants", { key: "t1", name: "T1", attributes: { tier: "gold" } });
    await post("/tenants", { key: "t2", name: "T2" });
    for (const key of ["alice", "bob", "carol"]) await post("/users", { key, email: `${key}@example.com` });
    await post("/resource_instances", {
      key: "d1",
      resource: "document",
      tenant: "t1",
      attributes: { secret: true },
    });
    await post("/resource_instances", { key: "f1", resource: "folder", tenant: "t2" });
  });

  test("assign a tenant role: RoleAssignmentRead with keys and ids, one revision", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
          user: "alice",
          role: "admin",
          tenant: "t1",
        }),
      [
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "alice", role: "admin", tenant: "t1", resource_instance: null },
        },
      ],
    );
    assert.equal(res.status, 200);
    assertPermit("post", "/role_assignments", 200, res.json);
    const a = res.json;
    assert.deepEqual(Object.keys(a).sort(), [
      "created_at",
      "environment_id",
      "id",
      "organization_id",
      "project_id",
      "role",
      "role_id",
      "tenant",
      "tenant_id",
      "user",
      "user_id",
    ]);
    assert.equal(a.user, "alice");
    assert.equal(a.role, "admin");
    assert.equal(a.tenant, "t1");
    assert.equal(a.environment_id, e.acme.envs.production);
    const user = (await e.call(e.acme.adminKey, "GET", `${F}/users/alice`)).json;
    assert.equal(a.user_id, user.id);
  });

  test("assign an instance role: the tenant comes from the instance; a missing instance is created in the given tenant", async () => {
    const e = env();
    const res = await e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
      user: "bob",
      role: "editor",
      resource_instance: "document:d1",
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/role_assignments", 200, res.json);
    assert.equal(res.json.tenant, "t1");
    assert.equal(res.json.resource_instance, "document:d1");
    const instance = (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Ad1`)).json;
    assert.equal(res.json.resource_instance_id, instance.id);
    assert.equal(res.json.tenant_id, instance.tenant_id);

    const created = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
          user: "bob",
          role: "owner",
          resource_instance: "folder:new-folder",
          tenant: "t2",
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "folder", key: "new-folder", tenant: "t2", attributes: {} },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "bob", role: "owner", tenant: "t2", resource_instance: "folder:new-folder" },
        },
      ],
    );
    assert.equal(created.json.tenant, "t2");
  });

  test("bad assignments answer 404/409/422 naming the problem and write nothing", async () => {
    const e = env();
    const cases: [Record<string, string>, number, RegExp][] = [
      [{ user: "nobody", role: "admin", tenant: "t1" }, 404, /user 'nobody'/],
      [{ user: "alice", role: "nope", tenant: "t1" }, 404, /role 'nope'/],
      [{ user: "alice", role: "editor", tenant: "t1" }, 404, /tenant-level role 'editor'/],
      [{ user: "alice", role: "admin", tenant: "nowhere" }, 404, /tenant 'nowhere'/],
      [{ user: "alice", role: "admin" }, 422, /tenant is required/],
      [{ user: "alice", role: "admin", tenant: "t1" }, 409, /already has role 'admin'/],
      [
        { user: "alice", role: "viewer", resource_instance: "document:d1", tenant: "t2" },
        422,
        /belongs to tenant 't1'/,
      ],
      [
        { user: "alice", role: "admin", resource_instance: "document:d1" },
        404,
        /role 'admin' was not found on resource 'document'/,
      ],
      [
        { user: "alice", role: "viewer", resource_instance: "document:ghost" },
        404,
        /resource instance 'document:ghost'/,
      ],
      [
        { user: "alice", role: "viewer", resource_instance: "starship:x", tenant: "t1" },
        404,
        /resource 'starship'/,
      ],
      [
        { user: "alice", role: "viewer", resource_instance: "document:bad key", tenant: "t1" },
        422,
        /must match/,
      ],
      [{ user: "bob", role: "editor", resource_instance: "document:d1" }, 409, /already has role 'editor'/],
    ];
    await expectEachRejected(e, `${F}/role_assignments`, cases);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, { role: "admin", tenant: "t1" }),
      422,
    );
  });

  test("the four list shapes: detailed x include_total_count", async () => {
    const { acme, call } = env();
    const plain = await call(
      acme.adminKey,
      "GET",
      `${F}/role_assignments?user=bob&detailed=false&include_total_count=false`,
    );
    assert.ok(Array.isArray(plain.json));
    assert.equal(plain.json.length, 2);
    assert.equal(typeof plain.json[0].user, "string");
    assertPermit("get", "/role_assignments", 200, plain.json);

    const detailed = await call(acme.adminKey, "GET", `${F}/role_assignments?user=bob&detailed=true`);
    assert.ok(Array.isArray(detailed.json));
    const editor = detailed.json.find((a: { role: { key: string } }) => a.role.key === "editor");
    assert.deepEqual(editor.role.permissions, ["read", "write"]);
    assert.deepEqual(editor.user, {
      id: editor.user.id,
      key: "bob",
      email: "bob@example.com",
      attributes: {},
    });
    assert.deepEqual(editor.tenant, {
      id: editor.tenant.id,
      key: "t1",
      name: "T1",
      attributes: { tier: "gold" },
    });
    assert.deepEqual(editor.resource_instance, {
      id: editor.resource_instance.id,
      key: "d1",
      resource: "document",
      attributes: { secret: true },
    });
    assertPermit("get", "/role_assignments", 200, detailed.json);

    const paged = await call(
      acme.adminKey,
      "GET",
      `${F}/role_assignments?include_total_count=true&per_page=1`,
    );
    assert.equal(paged.json.total_count, 3);
    assert.equal(paged.json.page_count, 3);
    assert.equal(paged.json.data.length, 1);
    assert.equal(typeof paged.json.data[0].role, "string");
    assertPermit("get", "/role_assignments", 200, paged.json);

    const both = await call(
      acme.adminKey,
      "GET",
      `${F}/role_assignments?include_total_count=true&detailed=true&user=alice`,
    );
    assert.equal(both.json.total_count, 1);
    assert.deepEqual(both.json.data[0].role.permissions, [
      "document:delete",
      "document:read",
      "document:write",
      "folder:read",
    ]);
    assert.equal(both.json.data[0].resource_instance, undefined);
    assertPermit("get", "/role_assignments", 200, both.json);

    const endpoint = await call(acme.adminKey, "GET", `${F}/role_assignments/detailed?user=alice`);
    assert.deepEqual(endpoint.json, both.json);
    assertPermit("get", "/role_assignments/detailed", 200, endpoint.json);
  });

  test("filters: user, role and tenant repeat; resource and resource_instance; unknown names match nothing", async () => {
    const { acme, call } = env();
    const list = async (q: string) => {
      const res = await call(acme.adminKey, "GET", `${F}/role_assignments?${q}`);
      assert.equal(res.status, 200, String(res.body));
      return res.json.map((a: { user: string; role: string }) => `${a.user}/${a.role}`).sort();
    };
    assert.deepEqual(await list(""), ["alice/admin", "bob/editor", "bob/owner"]);
    assert.deepEqual(await list("user=alice&user=bob"), ["alice/admin", "bob/editor", "bob/owner"]);
    assert.deepEqual(await list("user=alice"), ["alice/admin"]);
    assert.deepEqual(await list("role=editor&role=admin"), ["alice/admin", "bob/editor"]);
    assert.deepEqual(await list("tenant=t2"), ["bob/owner"]);
    assert.deepEqual(await list("tenant=t1&tenant=t2"), ["alice/admin", "bob/editor", "bob/owner"]);
    assert.deepEqual(await list("resource=folder"), ["bob/owner"]);
    assert.deepEqual(await list("resource_instance=document%3Ad1"), ["bob/editor"]);
    assert.deepEqual(await list("user=alice&tenant=t2"), []);
    assert.deepEqual(await list("user=nobody"), []);
    assert.deepEqual(await list("tenant=nowhere"), []);
    assert.deepEqual(await list("resource=starship"), []);
    assert.deepEqual(await list("role=nope&role=admin"), ["alice/admin"]);
    const userId = (await call(acme.adminKey, "GET", `${F}/users/alice`)).json.id;
    assert.deepEqual(await list(`user=${userId}`), ["alice/admin"]);
  });

  test("pagination: per_page up to 1000, page past the end, 422 beyond", async () => {
    const { acme, call } = env();
    assert.equal((await call(acme.adminKey, "GET", `${F}/role_assignments?per_page=1000`)).status, 200);
    const over = await call(acme.adminKey, "GET", `${F}/role_assignments?per_page=1001`);
    assert.equal(over.status, 422);
    assert.equal((await call(acme.adminKey, "GET", `${F}/role_assignments?page=0`)).status, 422);
    const past = await call(
      acme.adminKey,
      "GET",
      `${F}/role_assignments?page=4&per_page=1&include_total_count=true`,
    );
    assert.deepEqual(past.json, { data: [], total_count: 3, page_count: 3 });
    assert.deepEqual((await call(acme.adminKey, "GET", `${F}/role_assignments?page=4&per_page=1`)).json, []);
  });

  test("unassign: 204, or 200 with return_deleted; 404 when not assigned", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${F}/role_assignments?return_deleted=true`, {
          user: "bob",
          role: "owner",
          tenant: "t2",
          resource_instance: "folder:new-folder",
        }),
      [
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "bob", role: "owner", tenant: "t2", resource_instance: "folder:new-folder" },
        },
      ],
    );
    assert.equal(res.status, 200);
    assertPermit("delete", "/role_assignments", 200, res.json);
    assert.equal(res.json.resource_instance, "folder:new-folder");
    const missing = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${F}/role_assignments`, {
          user: "bob",
          role: "owner",
          tenant: "t2",
          resource_instance: "folder:new-folder",
        }),
      404,
    );
    assert.match(missing.json.message, /does not have role 'owner'/);
    await e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
      user: "carol",
      role: "viewer",
      tenant: "t2",
    });
    const plain = await e.call(e.acme.adminKey, "DELETE", `${F}/role_assignments`, {
      user: "carol",
      role: "viewer",
      tenant: "t2",
    });
    assert.equal(plain.status, 204);
    assert.equal(plain.body, "");
  });

  test("bulk assign: a bare array, one revision, all or nothing, missing_user_policy", async () => {
    const e = env();
    const url = `${F}/role_assignments/bulk`;
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", url, [
          { user: "carol", role: "viewer", tenant: "t1" },
          { user: "carol", role: "viewer", tenant: "t2" },
          { user: "alice", role: "admin", tenant: "t1" },
        ]),
      [
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "carol", role: "viewer", tenant: "t1", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "carol", role: "viewer", tenant: "t2", resource_instance: null },
        },
      ],
    );
    assert.deepEqual(res.json, { assignments_created: 2 });
    assertPermit("post", "/role_assignments/bulk", 200, res.json);

    const failing = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", url, [
          { user: "carol", role: "admin", tenant: "t2" },
          { user: "dave", role: "viewer", tenant: "t1" },
        ]),
      404,
    );
    assert.match(failing.json.message, /user 'dave'/);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${url}?missing_user_policy=ignore`, [
          { user: "carol", role: "admin", tenant: "t2" },
          { user: "carol", role: "nope", tenant: "t1" },
        ]),
      404,
    );
    const ignored = await e.call(e.acme.adminKey, "POST", `${url}?missing_user_policy=ignore`, [
      { user: "dave", role: "viewer", tenant: "t1" },
      { user: "carol", role: "admin", tenant: "t2" },
    ]);
    assert.deepEqual(ignored.json, { assignments_created: 1 });
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/users/dave`)).status, 404);
    const created = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${url}?missing_user_policy=create`, [
          { user: "dave", role: "viewer", tenant: "t1" },
          { user: "dave", role: "admin", tenant: "t1" },
        ]),
      [
        {
          kind: "user",
          op: "upsert",
          data: { key: "dave", email: null, first_name: null, last_name: null, attributes: {} },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "dave", role: "viewer", tenant: "t1", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "dave", role: "admin", tenant: "t1", resource_instance: null },
        },
      ],
    );
    assert.deepEqual(created.json, { assignments_created: 2 });
    assert.equal((await e.call(e.acme.adminKey, "GET", `${F}/users/dave`)).json.roles.length, 2);
    assert.equal((await e.call(e.acme.adminKey, "POST", `${url}?missing_user_policy=maybe`, [])).status, 422);
    assert.equal((await e.call(e.acme.adminKey, "POST", url, { user: "dave", role: "viewer" })).status, 422);
  });

  test("bulk unassign: a bare array, reports what it removed, all or nothing", async () => {
    const e = env();
    const url = `${F}/role_assignments/bulk`;
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", url, [
          { user: "dave", role: "viewer", tenant: "t1" },
          { user: "dave", role: "viewer", tenant: "nowhere" },
        ]),
      404,
    );
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", url, [
          { user: "dave", role: "viewer", tenant: "t1" },
          { user: "dave", role: "admin", tenant: "t1" },
          { user: "dave", role: "admin", tenant: "t2" },
        ]),
      [
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "dave", role: "viewer", tenant: "t1", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "dave", role: "admin", tenant: "t1", resource_instance: null },
        },
      ],
    );
    assert.deepEqual(res.json, { assignments_removed: 2 });
    assertPermit("delete", "/role_assignments/bulk", 200, res.json);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/users/dave`)).json.roles, []);
  });

  test("environments and organizations do not see each other's assignments", async () => {
    const { acme, globex, call } = env();
    const dev = await call(
      acme.adminKey,
      "GET",
      `${factsUrl(acme, "development")}/role_assignments?include_total_count=true`,
    );
    assert.deepEqual(dev.json, { data: [], total_count: 0, page_count: 0 });
    // alice exists only in acme production: another environment cannot assign to her.
    const devAssign = await call(acme.adminKey, "POST", `${factsUrl(acme, "development")}/role_assignments`, {
      user: "alice",
      role: "admin",
      tenant: "default",
    });
    assert.equal(devAssign.status, 404);
    const globexList = await call(globex.adminKey, "GET", `${factsUrl(globex)}/role_assignments`);
    assert.deepEqual(globexList.json, []);
    const crossing = await call(globex.adminKey, "GET", `${F}/role_assignments`);
    assert.ok(crossing.status === 403 || crossing.status === 404);
  });

  // The expiry tests run last and on their own users, so the counts of the tests above are not touched.
  const inAnHour = () => new Date(Date.now() + 3_600_000);
  /** The same instant written with a +02:00 offset: stored and read back with +00:00. */
  const withOffset = (d: Date) => {
    const shifted = new Date(d.getTime() + 2 * 3_600_000).toISOString();
    return `${shifted.slice(0, 23)}+02:00`;
  };
  const utc = (d: Date) => d.toISOString().replace("Z", "+00:00");

  test("expires_at: stored, normalised to +00:00, returned in reads and lists, carried by the change record", async () => {
    const e = env();
    const at = inAnHour();
    await e.call(e.acme.adminKey, "POST", `${F}/users`, { key: "erin" });
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
          user: "erin",
          role: "viewer",
          tenant: "t1",
          expires_at: withOffset(at),
        }),
      [
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "erin", role: "viewer", tenant: "t1", resource_instance: null, expires_at: utc(at) },
        },
      ],
    );
    assert.equal(res.json.expires_at, utc(at));
    const list = await e.call(e.acme.adminKey, "GET", `${F}/role_assignments?user=erin`);
    assert.deepEqual(
      list.json.map((a: { role: string; expires_at?: string }) => [a.role, a.expires_at]),
      [["viewer", utc(at)]],
    );
    const detailed = await e.call(e.acme.adminKey, "GET", `${F}/role_assignments/detailed?user=erin`);
    assert.equal(detailed.json.data[0].expires_at, utc(at));
    // An instance role, through POST /users/{id}/roles and through bulk: the same field.
    const viaUser = await e.call(e.acme.adminKey, "POST", `${F}/users/erin/roles`, {
      role: "editor",
      resource_instance: "document:d1",
      expires_at: utc(at),
    });
    assert.equal(viaUser.status, 200, viaUser.body);
    assert.equal(viaUser.json.expires_at, utc(at));
    const bulk = await e.call(e.acme.adminKey, "POST", `${F}/role_assignments/bulk`, [
      { user: "erin", role: "admin", tenant: "t2", expires_at: utc(at) },
    ]);
    assert.deepEqual(bulk.json, { assignments_created: 1 });
    const created = await e.call(e.acme.adminKey, "POST", `${F}/users`, {
      key: "frank",
      role_assignments: [{ role: "viewer", tenant: "t2", expires_at: utc(at) }],
    });
    assert.equal(created.status, 201, created.body);
    const all = await e.call(e.acme.adminKey, "GET", `${F}/role_assignments?user=erin&user=frank`);
    assert.deepEqual(
      all.json.map((a: { expires_at?: string }) => a.expires_at),
      [utc(at), utc(at), utc(at), utc(at)],
    );
    // Without the field, no expiry and no field in the read (Permit's RoleAssignmentRead).
    const plain = await e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
      user: "frank",
      role: "viewer",
      tenant: "t1",
    });
    assert.equal(plain.json.expires_at, undefined);
    assertPermit("post", "/role_assignments", 200, plain.json);
  });

  test("expires_at in the past or not a valid date-time: 422 naming the field, nothing written", async () => {
    const e = env();
    await e.call(e.acme.adminKey, "POST", `${F}/users`, { key: "ivy" });
    const past = utc(new Date(Date.now() - 1000));
    const bad: [string, unknown, (string | number)[]][] = [
      ["POST", { user: "ivy", role: "viewer", tenant: "t2", expires_at: past }, ["body", "expires_at"]],
      ["POST", { user: "ivy", role: "viewer", tenant: "t2", expires_at: "tomorrow" }, ["body", "expires_at"]],
      [
        "POST",
        { user: "ivy", role: "viewer", tenant: "t2", expires_at: "2099-01-01" },
        ["body", "expires_at"],
      ],
      [
        "POST",
        { user: "ivy", role: "viewer", tenant: "t2", expires_at: "2099-02-30T00:00:00Z" },
        ["body", "expires_at"],
      ],
      ["POST", { user: "ivy", role: "viewer", tenant: "t2", expires_at: 4102444800 }, ["body", "expires_at"]],
      [
        "BULK",
        [
          { user: "ivy", role: "viewer", tenant: "t2", expires_at: utc(inAnHour()) },
          { user: "ivy", role: "admin", tenant: "t1", expires_at: past },
        ],
        ["body", 1, "expires_at"],
      ],
      [
        "USER",
        { key: "gina", role_assignments: [{ role: "viewer", tenant: "t1", expires_at: past }] },
        ["body", "role_assignments", "expires_at"],
      ],
    ];
    for (const [kind, body, loc] of bad) {
      const [method, url] =
        kind === "BULK"
          ? ["POST", `${F}/role_assignments/bulk`]
          : kind === "USER"
            ? ["POST", `${F}/users`]
            : ["POST", `${F}/role_assignments`];
      const res = await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, method as "POST", url, body),
        422,
      );
      assert.equal(res.json.error_code, "INVALID_INPUT", res.body);
      assert.match(res.json.message, /expires_at/, res.body);
      const locs = (res.json.detail as { loc: (string | number)[] }[]).map((d) => d.loc.join("."));
      assert.ok(locs.includes(loc.join(".")), `${JSON.stringify(body)}: ${res.body}`);
    }
  });

  test("an expired assignment not yet purged: left out of lists, replaced by a new assignment; the purge deletes it once, with its change record", async () => {
    const e = env();
    const envId = e.acme.envs.production;
    await e.call(e.acme.adminKey, "POST", `${F}/users`, { key: "hank" });
    for (const body of [
      { user: "hank", role: "viewer", tenant: "t1", expires_at: utc(inAnHour()) },
      { user: "hank", role: "admin", tenant: "t2", expires_at: utc(inAnHour()) },
      { user: "hank", role: "viewer", resource_instance: "document:d1", expires_at: utc(inAnHour()) },
    ]) {
      const res = await e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, body);
      assert.equal(res.status, 200, res.body);
    }
    // Time passes for two of them: their instant is moved into the past in the database, without waiting.
    const ended = utc(new Date(Date.now() - 1000));
    const hank = (await e.call(e.acme.adminKey, "GET", `${F}/users/hank`)).json.id as string;
    await e.store.db
      .updateTable("role_assignments")
      .set({ expires_at: ended })
      .where("user_id", "=", hank)
      .where("tenant_id", "in", (eb) => eb.selectFrom("tenants").select("id").where("key", "=", "t1"))
      .execute();
    const listed = await e.call(
      e.acme.adminKey,
      "GET",
      `${F}/role_assignments?user=hank&include_total_count=true`,
    );
    assert.deepEqual(
      listed.json.data.map((a: { role: string; tenant: string }) => `${a.role}@${a.tenant}`),
      ["admin@t2"],
    );
    assert.equal(listed.json.total_count, 1);
    // Assigning the ended role again is not a 409: the new assignment replaces the ended row.
    await expectFeed(
      e,
      envId,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/role_assignments`, {
          user: "hank",
          role: "viewer",
          tenant: "t1",
        }),
      [
        {
          kind: "role_assignment",
          op: "delete",
          data: { user: "hank", role: "viewer", tenant: "t1", resource_instance: null },
        },
        {
          kind: "role_assignment",
          op: "upsert",
          data: { user: "hank", role: "viewer", tenant: "t1", resource_instance: null },
        },
      ],
    );
    // The purge, run by two instances at once: the ended instance role goes, once, in one revision.
    const before = await revisionOf(e, envId);
    const counts = await Promise.all([
      purgeExpiredAssignments({ db: e.store.db, notifier: e.app.notifier }),
      purgeExpiredAssignments({ db: e.store.db, notifier: e.app.notifier }),
    ]);
    assert.equal(counts[0] + counts[1], 1);
    const records = (await changesAfter(e, envId, before)).map(({ kind, op, data }) => ({ kind, op, data }));
    assert.deepEqual(records, [
      {
        kind: "role_assignment",
        op: "delete",
        data: { user: "hank", role: "viewer", tenant: "t1", resource_instance: "document:d1" },
      },
    ]);
    assert.equal(await revisionOf(e, envId), before + 1);
    const left = await e.call(e.acme.adminKey, "GET", `${F}/role_assignments?user=hank`);
    assert.deepEqual(
      left.json.map((a: { role: string; tenant: string; expires_at?: string }) => [
        a.role,
        a.tenant,
        a.expires_at !== undefined,
      ]),
      [
        ["admin", "t2", true],
        ["viewer", "t1", false],
      ],
    );
    const rows = await e.store.db
      .selectFrom("role_assignments")
      .select("id")
      .where("user_id", "=", hank)
      .execute();
    assert.equal(rows.length, 2);
    // Nothing left to purge: no revision.
    assert.equal(await purgeExpiredAssignments({ db: e.store.db, notifier: e.app.notifier }), 0);
    assert.equal(await revisionOf(e, envId), before + 1);
  });
});
