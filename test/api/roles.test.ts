import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readChangesAfter } from "../helpers/changes.ts";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertFeedMatchesApi,
  assertPermit,
  expectRejected,
  revisionOf,
  schemaUrl,
} from "../helpers/schema-api.ts";

const keysOf = (roles: { key: string }[]) => roles.map((r) => r.key);

describeEachDialect("schema API: roles", (env) => {
  let S = "";
  let envId = "";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let document: any;

  before(async () => {
    const { acme, call } = env();
    S = schemaUrl(acme);
    envId = acme.envs.production;
    const team = await call(acme.adminKey, "POST", `${S}/resources`, {
      key: "team",
      name: "Team",
      actions: { join: {} },
      roles: { member: { name: "Member" }, lead: { name: "Lead" } },
    });
    assert.equal(team.status, 200, String(team.body));
    const res = await call(acme.adminKey, "POST", `${S}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {}, write: {}, delete: {} },
      relations: { team: "team", parent: "document" },
    });
    assert.equal(res.status, 200, String(res.body));
    document = res.json;
  });

  test("tenant roles: create returns the role with permissions [] and no unset fields", async () => {
    const { acme, call } = env();
    let res = await call(acme.adminKey, "POST", `${S}/roles`, { key: "viewer", name: "Viewer" });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/roles", 200, res.json);
    assert.deepEqual(res.json, {
      id: res.json.id,
      key: "viewer",
      name: "Viewer",
      permissions: [],
      extends: [],
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: envId,
      created_at: res.json.created_at,
      updated_at: res.json.updated_at,
    });
    res = await call(acme.adminKey, "POST", `${S}/roles`, {
      key: "editor",
      name: "Editor",
      description: "edits",
      attributes: { level: 2 },
      permissions: ["document:write", document.actions.read.id, "document:write"],
      extends: ["viewer"],
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/roles", 200, res.json);
    assert.deepEqual(res.json.permissions, ["document:read", "document:write"]);
    assert.deepEqual(res.json.extends, ["viewer"]);
    assert.deepEqual(res.json.attributes, { level: 2 });
    assert.equal(res.json.description, "edits");
  });

  test("tenant roles: bad input is rejected with a clear error and writes nothing", async () => {
    const e = env();
    const post = (body: unknown) => () => e.call(e.acme.adminKey, "POST", `${S}/roles`, body);
    let res = await expectRejected(e, envId, 409, post({ key: "viewer", name: "Again" }));
    assert.equal(res.json.error_code, "DUPLICATE_ENTITY");
    await expectRejected(e, envId, 422, post({ key: "no spaces", name: "x" }));
    await expectRejected(e, envId, 422, post({ key: "x" }));
    res = await expectRejected(e, envId, 404, post({ key: "x", name: "x", permissions: ["report:read"] }));
    assert.match(res.json.message, /resource 'report'/);
    res = await expectRejected(e, envId, 404, post({ key: "x", name: "x", permissions: ["document:fly"] }));
    assert.match(res.json.message, /document:fly/);
    res = await expectRejected(e, envId, 422, post({ key: "x", name: "x", permissions: ["read"] }));
    assert.match(res.json.message, /resource key>:<action key/);
    res = await expectRejected(e, envId, 404, post({ key: "x", name: "x", extends: ["ghost"] }));
    assert.match(res.json.message, /ghost/);
    res = await expectRejected(
      e,
      envId,
      422,
      post({
        key: "x",
        name: "x",
        granted_to: {
          users_with_role: [{ role: "member", on_resource: "team", linked_by_relation: "team" }],
        },
      }),
    );
    assert.match(res.json.message, /resource roles/);
  });

  test("tenant roles: get, list as an array or a page, search", async () => {
    const { acme, call } = env();
    const editor = (await call(acme.adminKey, "GET", `${S}/roles/editor`)).json;
    assertPermit("get", "/roles/{role_id}", 200, editor);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/${editor.id}`)).json, editor);
    const missing = await call(acme.adminKey, "GET", `${S}/roles/ghost`);
    assert.equal(missing.status, 404);
    assert.match(missing.json.message, /role 'ghost'/);
    let res = await call(acme.adminKey, "GET", `${S}/roles`);
    assertPermit("get", "/roles", 200, res.json);
    assert.deepEqual(keysOf(res.json), ["viewer", "editor"]);
    res = await call(acme.adminKey, "GET", `${S}/roles?include_total_count=true&per_page=1&page=2`);
    assertPermit("get", "/roles", 200, res.json);
    assert.deepEqual(
      { ...res.json, data: keysOf(res.json.data) },
      { data: ["editor"], total_count: 2, page_count: 2 },
    );
    res = await call(acme.adminKey, "GET", `${S}/roles?search=EDIT`);
    assert.deepEqual(keysOf(res.json), ["editor"]);
    assert.equal(
      (await call(acme.adminKey, "GET", `${S}/roles?per_page=101`)).status,
      422,
      "per_page is at most 100",
    );
  });

  test("tenant roles: PATCH replaces what it names; permissions endpoints skip what is already so", async () => {
    const e = env();
    const { acme, call } = e;
    let res = await call(acme.adminKey, "PATCH", `${S}/roles/editor`, {
      name: "Writer",
      permissions: ["document:write"],
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("patch", "/roles/{role_id}", 200, res.json);
    assert.equal(res.json.name, "Writer");
    assert.equal(res.json.description, "edits");
    assert.deepEqual(res.json.permissions, ["document:write"]);
    assert.deepEqual(res.json.extends, ["viewer"]);

    res = await call(acme.adminKey, "POST", `${S}/roles/viewer/permissions`, {
      permissions: ["document:read", "document:read"],
    });
    assertPermit("post", "/roles/{role_id}/permissions", 200, res.json);
    assert.deepEqual(res.json.permissions, ["document:read"]);
    res = await call(acme.adminKey, "POST", `${S}/roles/viewer/permissions`, {
      permissions: ["document:read", "team:join"],
    });
    assert.deepEqual(res.json.permissions, ["document:read", "team:join"]);
    res = await call(acme.adminKey, "DELETE", `${S}/roles/viewer/permissions`, {
      permissions: ["team:join", "document:delete"],
    });
    assert.equal(res.status, 200);
    assertPermit("delete", "/roles/{role_id}/permissions", 200, res.json);
    assert.deepEqual(res.json.permissions, ["document:read"]);
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", `${S}/roles/viewer/permissions`, { permissions: ["document:read", "x:y"] }),
    );
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "DELETE", `${S}/roles/viewer/permissions`, { permissions: ["document:fly"] }),
    );
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", `${S}/roles/ghost/permissions`, { permissions: ["document:read"] }),
    );
    const res2 = await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "PATCH", `${S}/roles/viewer`, { extends: ["editor"] }),
    );
    assert.match(res2.json.message, /cycle/);
  });

  test("tenant roles: parents, ancestors and descendants", async () => {
    const e = env();
    const { acme, call } = e;
    await call(acme.adminKey, "POST", `${S}/roles`, { key: "owner", name: "Owner" });
    let res = await call(acme.adminKey, "PUT", `${S}/roles/owner/parents/editor`);
    assert.equal(res.status, 200, String(res.body));
    assertPermit("get", "/roles/{role_id}", 200, res.json);
    assert.deepEqual(res.json.extends, ["editor"]);
    res = await call(acme.adminKey, "PUT", `${S}/roles/owner/parents/editor`);
    assert.deepEqual(res.json.extends, ["editor"], "adding a parent twice keeps one");

    res = await call(acme.adminKey, "GET", `${S}/roles/owner/ancestors`);
    assertPermit("get", "/roles/{role_id}/ancestors", 200, res.json);
    assert.deepEqual(keysOf(res.json.roles), ["editor", "viewer"]);
    res = await call(acme.adminKey, "GET", `${S}/roles/viewer/descendants`);
    assertPermit("get", "/roles/{role_id}/descendants", 200, res.json);
    assert.deepEqual(keysOf(res.json.roles), ["editor", "owner"]);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/owner/descendants`)).json, { roles: [] });

    res = await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "PUT", `${S}/roles/viewer/parents/owner`),
    );
    assert.match(res.json.message, /viewer|owner/);
    await expectRejected(e, envId, 404, () => call(acme.adminKey, "PUT", `${S}/roles/viewer/parents/ghost`));
    res = await call(acme.adminKey, "DELETE", `${S}/roles/owner/parents/editor`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.extends, []);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/owner/ancestors`)).json, { roles: [] });
  });

  test("tenant roles: delete takes assignments along and the roles extending it let go", async () => {
    const e = env();
    const { acme, call, store } = e;
    await call(acme.adminKey, "PUT", `${S}/roles/owner/parents/viewer`);
    await call(acme.adminKey, "POST", `${S}/roles`, { key: "temp", name: "Temp", extends: ["viewer"] });
    const temp = (await call(acme.adminKey, "GET", `${S}/roles/temp`)).json;
    const tenant = await store.db
      .selectFrom("tenants")
      .select("id")
      .where("environment_id", "=", envId)
      .executeTakeFirstOrThrow();
    const scoped = { organization_id: acme.id, project_id: acme.projectId, environment_id: envId };
    const at = new Date().toISOString();
    const userId = crypto.randomUUID();
    await store.db
      .insertInto("users")
      .values({
        id: userId,
        ...scoped,
        key: "ann",
        email: null,
        first_name: null,
        last_name: null,
        attributes: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    await store.db
      .insertInto("role_assignments")
      .values({
        id: crypto.randomUUID(),
        ...scoped,
        user_id: userId,
        role_id: temp.id,
        tenant_id: tenant.id,
        resource_instance_id: null,
        created_at: at,
      })
      .execute();
    await call(acme.adminKey, "PUT", `${S}/roles/owner/parents/temp`);

    const before = await revisionOf(e, envId);
    const res = await call(acme.adminKey, "DELETE", `${S}/roles/temp`);
    assert.equal(res.status, 204);
    assert.equal(res.body, "");
    assert.equal((await call(acme.adminKey, "GET", `${S}/roles/temp`)).status, 404);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/owner`)).json.extends, ["viewer"]);
    const left = await store.db
      .selectFrom("role_assignments")
      .select("id")
      .where("environment_id", "=", envId)
      .execute();
    assert.equal(left.length, 0);
    const records = await readChangesAfter(store.db, envId, before, 100);
    assert.deepEqual(
      records.map((r) => ({ kind: r.kind, op: r.op, data: r.data })),
      [
        { kind: "role", op: "delete", data: { key: "temp" } },
        { kind: "role", op: "upsert", data: { key: "owner", permissions: [], extends: ["viewer"] } },
      ],
    );
    await expectRejected(e, envId, 404, () => call(acme.adminKey, "DELETE", `${S}/roles/temp`));
  });

  test("resource roles: create with permissions, extends and derivations; get; list", async () => {
    const e = env();
    const { acme, call } = e;
    const base = `${S}/resources/document/roles`;
    let res = await call(acme.adminKey, "POST", base, {
      key: "reader",
      name: "Reader",
      permissions: ["read"],
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/roles", 200, res.json);
    assert.deepEqual(res.json, {
      id: res.json.id,
      key: "reader",
      name: "Reader",
      permissions: ["read"],
      extends: [],
      granted_to: { id: res.json.id, when: { no_direct_roles_on_object: false }, users_with_role: [] },
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: envId,
      resource_id: document.id,
      resource: "document",
      created_at: res.json.created_at,
      updated_at: res.json.updated_at,
    });
    const team = (await call(acme.adminKey, "GET", `${S}/resources/team`)).json;
    res = await call(acme.adminKey, "POST", base, {
      key: "writer",
      name: "Writer",
      description: "writes",
      permissions: ["document:write", document.actions.delete.id],
      extends: ["reader"],
      granted_to: {
        when: { no_direct_roles_on_object: true },
        users_with_role: [{ role: "lead", on_resource: "team", linked_by_relation: "team" }],
      },
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/roles", 200, res.json);
    assert.deepEqual(res.json.permissions, ["delete", "write"]);
    assert.deepEqual(res.json.extends, ["reader"]);
    assert.deepEqual(res.json.granted_to.when, { no_direct_roles_on_object: true });
    assert.deepEqual(res.json.granted_to.users_with_role, [
      {
        role_id: team.roles.lead.id,
        resource_id: team.id,
        relation_id: res.json.granted_to.users_with_role[0].relation_id,
        role: "lead",
        on_resource: "team",
        linked_by_relation: "team",
        when: { no_direct_roles_on_object: false },
      },
    ]);
    const writer = res.json;
    res = await call(acme.adminKey, "GET", `${base}/${writer.id}`);
    assertPermit("get", "/resources/{resource_id}/roles/{role_id}", 200, res.json);
    assert.deepEqual(res.json, writer);
    res = await call(acme.adminKey, "GET", base);
    assertPermit("get", "/resources/{resource_id}/roles", 200, res.json);
    assert.deepEqual(keysOf(res.json), ["reader", "writer"]);
    assert.deepEqual(keysOf((await call(acme.adminKey, "GET", `${base}?per_page=1&page=2`)).json), [
      "writer",
    ]);
    const resource = (await call(acme.adminKey, "GET", `${S}/resources/document`)).json;
    assert.deepEqual(resource.roles.writer, writer);

    const post = (body: unknown) => () => call(acme.adminKey, "POST", base, body);
    await expectRejected(e, envId, 409, post({ key: "reader", name: "x" }));
    await expectRejected(e, envId, 404, post({ key: "x", name: "x", permissions: ["fly"] }));
    await expectRejected(e, envId, 404, post({ key: "x", name: "x", extends: ["member"] }));
    await expectRejected(
      e,
      envId,
      404,
      post({
        key: "x",
        name: "x",
        granted_to: { users_with_role: [{ role: "boss", on_resource: "team", linked_by_relation: "team" }] },
      }),
    );
    const mismatch = await expectRejected(
      e,
      envId,
      422,
      post({
        key: "x",
        name: "x",
        granted_to: {
          users_with_role: [{ role: "lead", on_resource: "team", linked_by_relation: "parent" }],
        },
      }),
    );
    assert.match(mismatch.json.message, /parent/);
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", `${S}/resources/ghost/roles`, { key: "x", name: "x" }),
    );
  });

  test("resource roles: PATCH, permissions, ancestors, descendants", async () => {
    const e = env();
    const { acme, call } = e;
    const base = `${S}/resources/document/roles`;
    let res = await call(acme.adminKey, "POST", base, { key: "admin", name: "Admin", extends: ["writer"] });
    assert.equal(res.status, 200, String(res.body));
    res = await call(acme.adminKey, "PATCH", `${base}/reader`, { description: "reads", permissions: [] });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("patch", "/resources/{resource_id}/roles/{role_id}", 200, res.json);
    assert.deepEqual(res.json.permissions, []);
    assert.equal(res.json.description, "reads");
    res = await call(acme.adminKey, "POST", `${base}/reader/permissions`, {
      permissions: ["read", "document:read"],
    });
    assertPermit("post", "/resources/{resource_id}/roles/{role_id}/permissions", 200, res.json);
    assert.deepEqual(res.json.permissions, ["read"]);
    res = await call(acme.adminKey, "DELETE", `${base}/writer/permissions`, {
      permissions: ["delete", "read"],
    });
    assertPermit("delete", "/resources/{resource_id}/roles/{role_id}/permissions", 200, res.json);
    assert.deepEqual(res.json.permissions, ["write"]);
    assert.equal(res.json.granted_to.users_with_role.length, 1, "PATCHing other parts keeps derivations");
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "POST", `${base}/reader/permissions`, { permissions: ["team:join"] }),
    );
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "PATCH", `${base}/reader`, { extends: ["admin"] }),
    );

    res = await call(acme.adminKey, "GET", `${base}/admin/ancestors`);
    assertPermit("get", "/resources/{resource_id}/roles/{role_id}/ancestors", 200, res.json);
    assert.deepEqual(keysOf(res.json.roles), ["writer", "reader"]);
    res = await call(acme.adminKey, "GET", `${base}/reader/descendants`);
    assertPermit("get", "/resources/{resource_id}/roles/{role_id}/descendants", 200, res.json);
    assert.deepEqual(keysOf(res.json.roles), ["writer", "admin"]);
  });

  test("resource roles: implicit grants and their conditions", async () => {
    const e = env();
    const { acme, call } = e;
    const grants = `${S}/resources/document/roles/reader/implicit_grants`;
    const rule = { role: "member", on_resource: "team", linked_by_relation: "team" };
    let res = await call(acme.adminKey, "POST", grants, rule);
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/roles/{role_id}/implicit_grants", 200, res.json);
    const team = (await call(acme.adminKey, "GET", `${S}/resources/team`)).json;
    assert.deepEqual(res.json, {
      role_id: team.roles.member.id,
      resource_id: team.id,
      relation_id: res.json.relation_id,
      role: "member",
      on_resource: "team",
      linked_by_relation: "team",
      when: { no_direct_roles_on_object: false },
    });
    res = await call(acme.adminKey, "POST", grants, {
      role: "reader",
      on_resource: "document",
      linked_by_relation: "parent",
      when: { no_direct_roles_on_object: true },
    });
    assert.equal(res.status, 200, String(res.body));
    await expectRejected(e, envId, 409, () => call(acme.adminKey, "POST", grants, rule));
    await expectRejected(e, envId, 404, () => call(acme.adminKey, "POST", grants, { ...rule, role: "boss" }));
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "POST", grants, { ...rule, linked_by_relation: "parent" }),
    );

    res = await call(acme.adminKey, "PUT", `${grants}/conditions`, { no_direct_roles_on_object: true });
    assert.equal(res.status, 200);
    assertPermit("put", "/resources/{resource_id}/roles/{role_id}/implicit_grants/conditions", 200, res.json);
    assert.deepEqual(res.json, { no_direct_roles_on_object: true });
    let reader = (await call(acme.adminKey, "GET", `${S}/resources/document/roles/reader`)).json;
    assert.deepEqual(reader.granted_to.when, { no_direct_roles_on_object: true });
    assert.deepEqual(
      reader.granted_to.users_with_role.map((r: { role: string; when: unknown }) => [r.role, r.when]).sort(),
      [
        ["member", { no_direct_roles_on_object: false }],
        ["reader", { no_direct_roles_on_object: true }],
      ],
    );

    res = await call(acme.adminKey, "DELETE", grants, rule);
    assert.equal(res.status, 204);
    await expectRejected(e, envId, 404, () => call(acme.adminKey, "DELETE", grants, rule));
    reader = (await call(acme.adminKey, "GET", `${S}/resources/document/roles/reader`)).json;
    assert.deepEqual(
      reader.granted_to.users_with_role.map((r: { role: string }) => r.role),
      ["reader"],
    );
  });

  test("resource roles: deleting one drops the derivations from it on other resources", async () => {
    const e = env();
    const { acme, call } = e;
    const before = await revisionOf(e, envId);
    const res = await call(acme.adminKey, "DELETE", `${S}/resources/team/roles/lead`);
    assert.equal(res.status, 204);
    const writer = (await call(acme.adminKey, "GET", `${S}/resources/document/roles/writer`)).json;
    assert.deepEqual(writer.granted_to.users_with_role, []);
    const records = await readChangesAfter(e.store.db, envId, before, 100);
    assert.deepEqual(records.map((r) => `${r.kind} ${r.op} ${(r.data as { key: string }).key}`).sort(), [
      "resource upsert document",
      "resource upsert team",
    ]);
    assert.equal((await call(acme.adminKey, "GET", `${S}/resources/team/roles/lead`)).status, 404);
  });

  test("bulk roles: create or replace tenant and resource roles in one transaction", async () => {
    const e = env();
    const { acme, call } = e;
    const res = await call(acme.adminKey, "PUT", `${S}/bulk/roles`, {
      operations: [
        { key: "auditor", name: "Auditor", permissions: ["document:read"], extends: ["support"] },
        { key: "support", name: "Support" },
        { key: "viewer", name: "Viewer v2", permissions: ["team:join"] },
        {
          key: "commenter",
          name: "Commenter",
          resource: "document",
          permissions: ["read"],
          extends: ["reader"],
        },
      ],
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("put", "/bulk/roles", 200, res.json);
    assert.deepEqual(res.json, {
      created: ["auditor", "support", "document:commenter"],
      updated: ["viewer"],
    });
    const viewer = (await call(acme.adminKey, "GET", `${S}/roles/viewer`)).json;
    assert.equal(viewer.name, "Viewer v2");
    assert.deepEqual(viewer.permissions, ["team:join"]);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/auditor`)).json.extends, ["support"]);
    const commenter = (await call(acme.adminKey, "GET", `${S}/resources/document/roles/commenter`)).json;
    assert.deepEqual(commenter.extends, ["reader"]);
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "PUT", `${S}/bulk/roles`, {
        operations: [
          { key: "fresh", name: "Fresh" },
          { key: "broken", name: "Broken", permissions: ["document:fly"] },
        ],
      }),
    );
    assert.equal((await call(acme.adminKey, "GET", `${S}/roles/fresh`)).status, 404);
  });

  test("environments and organizations never see each other's roles", async () => {
    const { acme, globex, call } = env();
    const dev = schemaUrl(acme, "development");
    assert.deepEqual((await call(acme.adminKey, "GET", `${dev}/roles`)).json, []);
    const res = await call(acme.adminKey, "POST", `${dev}/roles`, { key: "viewer", name: "Dev viewer" });
    assert.equal(res.status, 200, "the same key is free in another environment");
    const prodViewer = (await call(acme.adminKey, "GET", `${S}/roles/viewer`)).json;
    assert.equal((await call(acme.adminKey, "GET", `${dev}/roles/${prodViewer.id}`)).status, 404);
    assert.equal(
      (await call(acme.adminKey, "PATCH", `${dev}/roles/${prodViewer.id}`, { name: "x" })).status,
      404,
    );
    assert.equal((await call(globex.adminKey, "GET", `${S}/roles`)).status, 404);
    assert.deepEqual((await call(globex.adminKey, "GET", `${schemaUrl(globex)}/roles`)).json, []);
    assert.equal((await call(acme.adminKey, "GET", `${S}/roles/viewer`)).json.name, "Viewer v2");
  });

  test("the change feed, replayed, describes exactly what the API reads", async () => {
    const e = env();
    await assertFeedMatchesApi(e, e.acme, "production");
    await assertFeedMatchesApi(e, e.acme, "development");
  });
});
