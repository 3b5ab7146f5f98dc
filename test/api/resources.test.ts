import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readChangesAfter } from "../helpers/changes.ts";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertFeedMatchesApi,
  assertPermit,
  expectRejected,
  normalResource,
  replayFeed,
  resourceDataOfRead,
  revisionOf,
  schemaUrl,
} from "../helpers/schema-api.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const ACCOUNT = {
  key: "account",
  name: "Account",
  actions: { read: {}, manage: { name: "Manage", description: "change settings" } },
  roles: {
    admin: { name: "Admin", permissions: ["read", "manage"] },
    member: { name: "Member", permissions: ["account:read"], description: "reads" },
  },
};

const FOLDER = {
  key: "folder",
  name: "Folder",
  urn: "urn:acme:folder",
  actions: { read: {}, create: { name: "Create", attributes: { risky: false } } },
  attributes: { size: { type: "number", description: "bytes" }, owner: { type: "string" } },
  relations: { account: "account", parent: "folder" },
  roles: {
    viewer: { name: "Viewer", permissions: ["read"] },
    editor: {
      name: "Editor",
      permissions: ["create"],
      extends: ["viewer"],
      granted_to: {
        users_with_role: [
          { role: "admin", on_resource: "account", linked_by_relation: "account" },
          {
            role: "editor",
            on_resource: "folder",
            linked_by_relation: "parent",
            when: { no_direct_roles_on_object: true },
          },
        ],
      },
    },
  },
};

describeEachDialect("schema API: resources", (env) => {
  let S = "";
  let envId = "";
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let account: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let folder: any;

  before(async () => {
    const { acme, call } = env();
    S = schemaUrl(acme);
    envId = acme.envs.production;
    const a = await call(acme.adminKey, "POST", `${S}/resources`, ACCOUNT);
    assert.equal(a.status, 200, String(a.body));
    account = a.json;
    const f = await call(acme.adminKey, "POST", `${S}/resources`, FOLDER);
    assert.equal(f.status, 200, String(f.body));
    folder = f.json;
  });

  test("create with inline actions, attributes, relations and roles returns the whole resource", async () => {
    const { acme } = env();
    assertPermit("post", "/resources", 200, folder);
    assert.deepEqual(Object.keys(folder).sort(), [
      "action_groups",
      "actions",
      "attributes",
      "created_at",
      "environment_id",
      "id",
      "key",
      "name",
      "organization_id",
      "project_id",
      "relations",
      "roles",
      "updated_at",
      "urn",
    ]);
    assert.equal(folder.description, undefined, "description left out stays absent");
    assert.equal(folder.environment_id, acme.envs.production);
    assert.equal(folder.organization_id, acme.id);
    assert.equal(folder.project_id, acme.projectId);
    assert.match(folder.id, UUID_RE);
    assert.deepEqual(Object.keys(folder.actions), ["create", "read"]);
    assert.deepEqual(folder.actions.read, { id: folder.actions.read.id, key: "read", name: "read" });
    assert.deepEqual(folder.actions.create, {
      id: folder.actions.create.id,
      key: "create",
      name: "Create",
      attributes: { risky: false },
    });
    assert.deepEqual(folder.attributes.size, {
      id: folder.attributes.size.id,
      key: "size",
      type: "number",
      description: "bytes",
    });
    assert.deepEqual(folder.relations, {
      account: { resource_id: account.id, resource: "account", relation_name: "account" },
      parent: { resource_id: folder.id, resource: "folder", relation_name: "parent" },
    });
    assert.deepEqual(folder.action_groups, {});
    assert.deepEqual(account.actions.manage.description, "change settings");
    assert.deepEqual(account.roles.member.permissions, ["read"], "r:a form stored as the action");
    assert.deepEqual(account.roles.admin.permissions.sort(), ["manage", "read"]);

    const editor = folder.roles.editor;
    assert.equal(editor.resource, "folder");
    assert.equal(editor.resource_id, folder.id);
    assert.deepEqual(editor.permissions, ["create"]);
    assert.deepEqual(editor.extends, ["viewer"]);
    assert.equal(editor.description, undefined);
    assert.deepEqual(editor.granted_to.when, { no_direct_roles_on_object: false });
    const rules = [...editor.granted_to.users_with_role].sort((a, b) => a.role.localeCompare(b.role));
    assert.deepEqual(rules, [
      {
        role_id: account.roles.admin.id,
        resource_id: account.id,
        relation_id: rules[0].relation_id,
        role: "admin",
        on_resource: "account",
        linked_by_relation: "account",
        when: { no_direct_roles_on_object: false },
      },
      {
        role_id: editor.id,
        resource_id: folder.id,
        relation_id: rules[1].relation_id,
        role: "editor",
        on_resource: "folder",
        linked_by_relation: "parent",
        when: { no_direct_roles_on_object: true },
      },
    ]);
    assert.deepEqual(folder.roles.viewer.permissions, ["read"]);
    assert.deepEqual(folder.roles.viewer.granted_to.users_with_role, []);
  });

  test("get by key or id, list as an array or a page, search and built-ins", async () => {
    const { acme, call } = env();
    for (const ref of ["folder", folder.id]) {
      const res = await call(acme.adminKey, "GET", `${S}/resources/${ref}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, folder);
      assertPermit("get", "/resources/{resource_id}", 200, res.json);
    }
    const list = await call(acme.adminKey, "GET", `${S}/resources`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.json.map((r: { key: string }) => r.key),
      ["account", "folder"],
    );
    assertPermit("get", "/resources", 200, list.json);
    const page = await call(
      acme.adminKey,
      "GET",
      `${S}/resources?include_total_count=true&per_page=1&page=2`,
    );
    assert.deepEqual(
      { ...page.json, data: page.json.data.map((r: { key: string }) => r.key) },
      { data: ["folder"], total_count: 2, page_count: 2 },
    );
    assertPermit("get", "/resources", 200, page.json);
    const one = await call(acme.adminKey, "GET", `${S}/resources?include_total_count=true&search=FOLD`);
    assert.deepEqual(one.json.total_count, 1);
    assert.equal(one.json.page_count, 1);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/resources?search=%25`)).json, []);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/resources?search=_`)).json, []);
    const missing = await call(acme.adminKey, "GET", `${S}/resources/nope`);
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error_code, "NOT_FOUND");
    assert.match(missing.json.message, /nope/);
  });

  test("bad keys, duplicates and unknown references are rejected and write nothing", async () => {
    const e = env();
    const post = (body: unknown) => () => e.call(e.acme.adminKey, "POST", `${S}/resources`, body);
    const doc = (extra: Record<string, unknown>) => ({
      key: "doc",
      name: "Doc",
      actions: { read: {} },
      ...extra,
    });

    let res = await expectRejected(e, envId, 422, post(doc({ actions: { "bad key": {} } })));
    assert.match(res.json.message, /bad key/);
    assert.deepEqual(res.json.detail[0].loc, ["body", "actions", "bad key"]);
    res = await expectRejected(e, envId, 422, post({ key: "bad key", name: "x", actions: {} }));
    assert.equal(res.json.error_code, "INVALID_INPUT");
    await expectRejected(e, envId, 422, post(doc({ key: "__secret" })));
    await expectRejected(e, envId, 422, post(doc({ roles: { "a:b": { name: "x" } } })));
    await expectRejected(e, envId, 422, post(doc({ relations: { "x y": "folder" } })));
    await expectRejected(e, envId, 422, post(doc({ attributes: { color: { type: "colour" } } })));
    await expectRejected(e, envId, 422, post({ key: "doc", name: "Doc" }));

    res = await expectRejected(e, envId, 409, post({ ...ACCOUNT }));
    assert.equal(res.json.error_code, "DUPLICATE_ENTITY");

    res = await expectRejected(e, envId, 404, post(doc({ relations: { parent: "nope" } })));
    assert.match(res.json.message, /resource 'nope'/);
    res = await expectRejected(
      e,
      envId,
      404,
      post(doc({ roles: { r: { name: "R", permissions: ["fly"] } } })),
    );
    assert.match(res.json.message, /doc:fly/);
    res = await expectRejected(
      e,
      envId,
      422,
      post(doc({ roles: { r: { name: "R", permissions: ["account:read"] } } })),
    );
    assert.match(res.json.message, /account:read/);
    res = await expectRejected(e, envId, 404, post(doc({ roles: { r: { name: "R", extends: ["ghost"] } } })));
    assert.match(res.json.message, /doc:ghost/);
    const grant = (rule: Record<string, unknown>) =>
      doc({
        relations: { parent: "folder" },
        roles: { r: { name: "R", granted_to: { users_with_role: [rule] } } },
      });
    res = await expectRejected(
      e,
      envId,
      404,
      post(grant({ role: "viewer", on_resource: "folder", linked_by_relation: "owner" })),
    );
    assert.match(res.json.message, /relation 'doc:owner'/);
    res = await expectRejected(
      e,
      envId,
      404,
      post(grant({ role: "boss", on_resource: "folder", linked_by_relation: "parent" })),
    );
    assert.match(res.json.message, /folder:boss/);
    res = await expectRejected(
      e,
      envId,
      422,
      post(grant({ role: "admin", on_resource: "account", linked_by_relation: "parent" })),
    );
    assert.match(res.json.message, /parent/);
    res = await expectRejected(
      e,
      envId,
      422,
      post(
        doc({
          roles: {
            a: { name: "A", extends: ["b"] },
            b: { name: "B", extends: ["c"] },
            c: { name: "C", extends: ["a"] },
          },
        }),
      ),
    );
    assert.match(res.json.message, /cycle/);
    const get = await e.call(e.acme.adminKey, "GET", `${S}/resources/doc`);
    assert.equal(get.status, 404);
  });

  test("PATCH replaces only the blocks it names and keeps ids of what stays", async () => {
    const { acme, call } = env();
    const role = await call(acme.adminKey, "POST", `${S}/roles`, {
      key: "reviewer",
      name: "Reviewer",
      permissions: ["folder:create", "folder:read", "account:read"],
    });
    assert.equal(role.status, 200, String(role.body));

    let res = await call(acme.adminKey, "PATCH", `${S}/resources/folder`, { description: "folders" });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("patch", "/resources/{resource_id}", 200, res.json);
    assert.equal(res.json.description, "folders");
    assert.deepEqual(res.json.roles, folder.roles);
    assert.deepEqual(res.json.actions, folder.actions);

    res = await call(acme.adminKey, "PATCH", `${S}/resources/folder`, { actions: { read: {}, delete: {} } });
    assert.equal(res.status, 200, String(res.body));
    assert.deepEqual(Object.keys(res.json.actions).sort(), ["delete", "read"]);
    assert.equal(res.json.actions.read.id, folder.actions.read.id, "a kept action keeps its id");
    assert.deepEqual(res.json.roles.editor.permissions, [], "permissions on the removed action are gone");
    assert.deepEqual(res.json.roles.viewer.permissions, ["read"]);
    const reviewer = await call(acme.adminKey, "GET", `${S}/roles/reviewer`);
    assert.deepEqual(reviewer.json.permissions, ["account:read", "folder:read"]);
    folder = res.json;
  });

  test("PUT replaces the whole definition, or creates the resource under the path key", async () => {
    const { acme, call } = env();
    let res = await call(acme.adminKey, "PUT", `${S}/resources/scratch`, {
      name: "Scratch",
      description: "tmp",
      actions: { a: {}, b: {} },
      attributes: { x: { type: "bool" } },
      roles: { r: { name: "R", permissions: ["a"] } },
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("put", "/resources/{resource_id}", 200, res.json);
    assert.equal(res.json.key, "scratch");
    const id = res.json.id;
    const roleId = res.json.roles.r.id;
    res = await call(acme.adminKey, "PUT", `${S}/resources/${id}`, {
      name: "Scratch 2",
      actions: { b: {}, c: {} },
      roles: { r: { name: "R2", permissions: ["b", "c"] } },
    });
    assert.equal(res.status, 200, String(res.body));
    assert.equal(res.json.name, "Scratch 2");
    assert.equal(res.json.description, undefined, "a field left out of PUT is cleared");
    assert.deepEqual(res.json.attributes, {}, "a block left out of PUT is emptied");
    assert.deepEqual(Object.keys(res.json.actions).sort(), ["b", "c"]);
    assert.equal(res.json.roles.r.id, roleId);
    assert.deepEqual(res.json.roles.r.permissions.sort(), ["b", "c"]);
    const e = env();
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "PUT", `${S}/resources/00000000-0000-4000-8000-000000000000`, {
        name: "x",
        actions: {},
      }),
    );
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "PUT", `${S}/resources/bad%20key`, { name: "x", actions: {} }),
    );
    assert.equal((await call(acme.adminKey, "DELETE", `${S}/resources/scratch`)).status, 204);
  });

  test("actions: create, list, get, update, delete; deleting one revokes it everywhere", async () => {
    const e = env();
    const { acme, call } = e;
    const base = `${S}/resources/folder/actions`;
    let res = await call(acme.adminKey, "POST", base, { key: "share", name: "Share" });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/actions", 200, res.json);
    assert.deepEqual(res.json, {
      id: res.json.id,
      key: "share",
      name: "Share",
      permission_name: "folder:share",
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: envId,
      resource_id: folder.id,
      created_at: res.json.created_at,
      updated_at: res.json.updated_at,
    });
    const share = res.json;
    await expectRejected(e, envId, 409, () => call(acme.adminKey, "POST", base, { key: "share", name: "x" }));
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "POST", base, { key: "sh are", name: "x" }),
    );
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", `${S}/resources/nope/actions`, { key: "a", name: "x" }),
    );

    res = await call(acme.adminKey, "GET", base);
    assert.deepEqual(
      res.json.map((a: { permission_name: string }) => a.permission_name),
      ["folder:read", "folder:delete", "folder:share"],
    );
    assertPermit("get", "/resources/{resource_id}/actions", 200, res.json);
    res = await call(acme.adminKey, "GET", `${base}?per_page=1&page=3`);
    assert.deepEqual(
      res.json.map((a: { key: string }) => a.key),
      ["share"],
    );
    res = await call(acme.adminKey, "GET", `${base}/${share.id}`);
    assert.deepEqual(res.json, share);
    assertPermit("get", "/resources/{resource_id}/actions/{action_id}", 200, res.json);
    res = await call(acme.adminKey, "PATCH", `${base}/share`, {
      description: "share it",
      attributes: { n: 1 },
    });
    assert.equal(res.status, 200);
    assertPermit("patch", "/resources/{resource_id}/actions/{action_id}", 200, res.json);
    assert.equal(res.json.description, "share it");
    assert.deepEqual(res.json.attributes, { n: 1 });
    assert.equal(res.json.name, "Share");

    await call(acme.adminKey, "POST", `${S}/resources/folder/roles/viewer/permissions`, {
      permissions: ["share"],
    });
    await call(acme.adminKey, "POST", `${S}/roles/reviewer/permissions`, { permissions: ["folder:share"] });
    const before = await revisionOf(e, envId);
    res = await call(acme.adminKey, "DELETE", `${base}/share`);
    assert.equal(res.status, 204);
    assert.equal(res.body, "");
    assert.equal(res.headers["x-gatehouse-revision"], String(before + 1));
    assert.equal((await call(acme.adminKey, "GET", `${base}/share`)).status, 404);
    const viewer = await call(acme.adminKey, "GET", `${S}/resources/folder/roles/viewer`);
    assert.deepEqual(viewer.json.permissions, ["read"]);
    const reviewer = await call(acme.adminKey, "GET", `${S}/roles/reviewer`);
    assert.deepEqual(reviewer.json.permissions, ["account:read", "folder:read"]);
    const records = await readChangesAfter(e.store.db, envId, before, 100);
    assert.deepEqual(records.map((r) => `${r.kind} ${r.op} ${(r.data as { key: string }).key}`).sort(), [
      "resource upsert folder",
      "role upsert reviewer",
    ]);
    const reviewerRecord = records.find((r) => r.kind === "role")?.data as { permissions: string[] };
    assert.deepEqual(reviewerRecord.permissions.sort(), ["account:read", "folder:read"]);
  });

  test("attributes: CRUD on a resource, and user attributes on the hidden built-in user resource", async () => {
    const e = env();
    const { acme, call } = e;
    const base = `${S}/resources/folder/attributes`;
    let res = await call(acme.adminKey, "POST", base, { key: "tags", type: "array" });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/attributes", 200, res.json);
    assert.deepEqual(res.json, {
      id: res.json.id,
      key: "tags",
      type: "array",
      resource_id: folder.id,
      resource_key: "folder",
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: envId,
      created_at: res.json.created_at,
      updated_at: res.json.updated_at,
      built_in: false,
    });
    await expectRejected(e, envId, 409, () =>
      call(acme.adminKey, "POST", base, { key: "tags", type: "json" }),
    );
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "POST", base, { key: "t", type: "colour" }),
    );
    res = await call(acme.adminKey, "PATCH", `${base}/tags`, { type: "json", description: "labels" });
    assertPermit("patch", "/resources/{resource_id}/attributes/{attribute_id}", 200, res.json);
    assert.equal(res.json.type, "json");
    res = await call(acme.adminKey, "GET", base);
    assertPermit("get", "/resources/{resource_id}/attributes", 200, res.json);
    assert.deepEqual(
      res.json.map((a: { key: string }) => a.key),
      ["owner", "size", "tags"],
    );
    res = await call(acme.adminKey, "GET", `${base}/tags`);
    assertPermit("get", "/resources/{resource_id}/attributes/{attribute_id}", 200, res.json);
    assert.equal(res.json.description, "labels");
    assert.equal((await call(acme.adminKey, "DELETE", `${base}/tags`)).status, 204);
    assert.equal((await call(acme.adminKey, "GET", `${base}/tags`)).status, 404);

    const users = `${S}/users/attributes`;
    assert.deepEqual(
      (await call(acme.adminKey, "GET", users)).json,
      [],
      "no user attributes in a new environment",
    );
    assert.equal((await call(acme.adminKey, "GET", `${users}/age`)).status, 404);
    res = await call(acme.adminKey, "POST", users, { key: "age", type: "number", description: "years" });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/users/attributes", 200, res.json);
    assert.equal(res.json.resource_key, "__user");
    assert.equal(res.json.built_in, false);
    res = await call(acme.adminKey, "POST", users, { key: "country", type: "string" });
    res = await call(acme.adminKey, "GET", users);
    assertPermit("get", "/users/attributes", 200, res.json);
    assert.deepEqual(
      res.json.map((a: { key: string }) => a.key),
      ["age", "country"],
    );
    res = await call(acme.adminKey, "PATCH", `${users}/country`, { description: "ISO code" });
    assertPermit("patch", "/users/attributes/{attribute_id}", 200, res.json);
    assert.equal(
      (await call(acme.adminKey, "GET", `${users}/country?resource_id=__user`)).json.description,
      "ISO code",
    );
    assertPermit("get", "/users/attributes/{attribute_id}", 200, res.json);
    assert.equal((await call(acme.adminKey, "DELETE", `${users}/country`)).status, 204);
    await expectRejected(e, envId, 409, () =>
      call(acme.adminKey, "POST", users, { key: "age", type: "string" }),
    );

    const listed = await call(acme.adminKey, "GET", `${S}/resources`);
    assert.ok(!listed.json.some((r: { key: string }) => r.key === "__user"), "built-ins are hidden");
    const all = await call(acme.adminKey, "GET", `${S}/resources?include_built_in=true`);
    const user = all.json.find((r: { key: string }) => r.key === "__user");
    assert.deepEqual(Object.keys(user.attributes), ["age"]);
    await expectRejected(e, envId, 422, () => call(acme.adminKey, "DELETE", `${S}/resources/__user`));
    await expectRejected(e, envId, 422, () =>
      call(acme.adminKey, "POST", `${S}/resources/__user/actions`, { key: "x", name: "x" }),
    );
  });

  test("action groups: CRUD with their actions", async () => {
    const e = env();
    const { acme, call } = e;
    const base = `${S}/resources/account/action_groups`;
    let res = await call(acme.adminKey, "POST", base, {
      key: "all",
      name: "All",
      actions: ["read", "account:manage", account.actions.read.id],
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/action_groups", 200, res.json);
    assert.deepEqual(res.json.actions.sort(), ["manage", "read"]);
    assert.equal(res.json.resource_id, account.id);
    assert.equal(res.json.description, undefined);
    await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", base, { key: "g", name: "G", actions: ["read", "fly"] }),
    );
    await expectRejected(e, envId, 409, () => call(acme.adminKey, "POST", base, { key: "all", name: "G" }));
    res = await call(acme.adminKey, "PATCH", `${base}/all`, { actions: ["read"], description: "reads" });
    assertPermit("patch", "/resources/{resource_id}/action_groups/{action_group_id}", 200, res.json);
    assert.deepEqual(res.json.actions, ["read"]);
    res = await call(acme.adminKey, "GET", base);
    assertPermit("get", "/resources/{resource_id}/action_groups", 200, res.json);
    assert.equal(res.json.length, 1);
    res = await call(acme.adminKey, "GET", `${base}/${res.json[0].id}`);
    assertPermit("get", "/resources/{resource_id}/action_groups/{action_group_id}", 200, res.json);
    const got = await call(acme.adminKey, "GET", `${S}/resources/account`);
    assert.deepEqual(got.json.action_groups, { all: ["read"] });
    await call(acme.adminKey, "POST", base, { key: "tmp", name: "Tmp" });
    assert.equal((await call(acme.adminKey, "DELETE", `${base}/tmp`)).status, 204);
    assert.equal((await call(acme.adminKey, "GET", `${base}/tmp`)).status, 404);
  });

  test("relations: paginated list, create on the object, get, delete removes the derivations through it", async () => {
    const e = env();
    const { acme, call } = e;
    let res = await call(acme.adminKey, "POST", `${S}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {} },
      roles: { reader: { name: "Reader", permissions: ["read"] } },
    });
    assert.equal(res.status, 200, String(res.body));
    const base = `${S}/resources/document/relations`;
    res = await call(acme.adminKey, "POST", base, {
      key: "parent",
      name: "Parent",
      description: "the folder holding it",
      subject_resource: "folder",
    });
    assert.equal(res.status, 200, String(res.body));
    assertPermit("post", "/resources/{resource_id}/relations", 200, res.json);
    const document = (await call(acme.adminKey, "GET", `${S}/resources/document`)).json;
    assert.deepEqual(res.json, {
      id: res.json.id,
      key: "parent",
      name: "Parent",
      description: "the folder holding it",
      subject_resource: "folder",
      subject_resource_id: folder.id,
      object_resource: "document",
      object_resource_id: document.id,
      organization_id: acme.id,
      project_id: acme.projectId,
      environment_id: envId,
      created_at: res.json.created_at,
      updated_at: res.json.updated_at,
    });
    const relation = res.json;
    await expectRejected(e, envId, 409, () =>
      call(acme.adminKey, "POST", base, { key: "parent", name: "P", subject_resource: "account" }),
    );
    res = await expectRejected(e, envId, 404, () =>
      call(acme.adminKey, "POST", base, { key: "owner", name: "O", subject_resource: "person" }),
    );
    assert.match(res.json.message, /person/);

    res = await call(acme.adminKey, "GET", base);
    assertPermit("get", "/resources/{resource_id}/relations", 200, res.json);
    assert.deepEqual(res.json, { data: [relation], total_count: 1, page_count: 1 });
    res = await call(acme.adminKey, "GET", `${base}/parent`);
    assertPermit("get", "/resources/{resource_id}/relations/{relation_id}", 200, res.json);
    assert.deepEqual(res.json, relation);
    assert.equal(
      (await call(acme.adminKey, "GET", `${S}/resources/folder/relations/parent`)).json.key,
      "parent",
    );

    res = await call(acme.adminKey, "POST", `${S}/resources/document/roles/reader/implicit_grants`, {
      role: "viewer",
      on_resource: "folder",
      linked_by_relation: "parent",
    });
    assert.equal(res.status, 200, String(res.body));
    const db = e.store.db;
    const tenant = await db
      .selectFrom("tenants")
      .select("id")
      .where("environment_id", "=", envId)
      .executeTakeFirstOrThrow();
    const scoped = { organization_id: acme.id, project_id: acme.projectId, environment_id: envId };
    const at = new Date().toISOString();
    const instance = (resourceId: string, key: string) => ({
      id: crypto.randomUUID(),
      ...scoped,
      resource_id: resourceId,
      tenant_id: tenant.id,
      key,
      attributes: null,
      created_at: at,
      updated_at: at,
    });
    const [f1, d1] = [instance(folder.id, "f1"), instance(document.id, "d1")];
    await db.insertInto("resource_instances").values([f1, d1]).execute();
    await db
      .insertInto("relationship_tuples")
      .values({
        id: crypto.randomUUID(),
        ...scoped,
        subject_id: f1.id,
        relation_id: relation.id,
        object_id: d1.id,
        tenant_id: tenant.id,
        created_at: at,
        updated_at: at,
      })
      .execute();
    const before = await revisionOf(e, envId);
    assert.equal((await call(acme.adminKey, "DELETE", `${base}/${relation.id}`)).status, 204);
    const records = await readChangesAfter(db, envId, before, 100);
    assert.deepEqual(
      records.map((r) => ({ kind: r.kind, op: r.op, data: r.kind === "resource" ? "..." : r.data })),
      [
        { kind: "resource", op: "upsert", data: "..." },
        {
          kind: "relationship_tuple",
          op: "delete",
          data: { subject: "folder:f1", relation: "parent", object: "document:d1" },
        },
      ],
    );
    const tuples = await db
      .selectFrom("relationship_tuples")
      .select("id")
      .where("environment_id", "=", envId)
      .execute();
    assert.equal(tuples.length, 0, "the relation's tuples are gone");
    await db.deleteFrom("resource_instances").where("id", "in", [f1.id, d1.id]).execute();
    const reader = await call(acme.adminKey, "GET", `${S}/resources/document/roles/reader`);
    assert.deepEqual(reader.json.granted_to.users_with_role, []);
    assert.deepEqual((await call(acme.adminKey, "GET", base)).json, {
      data: [],
      total_count: 0,
      page_count: 0,
    });
  });

  test("deleting a resource removes everything that names it, and the feed says so", async () => {
    const e = env();
    const { acme, call, store } = e;
    const db = store.db;
    // A resource with relations on both ends, derivations both ways, a condition set tree and facts.
    let res = await call(acme.adminKey, "POST", `${S}/resources`, {
      key: "project",
      name: "Project",
      actions: { view: {}, edit: {} },
      relations: { account: "account" },
      roles: {
        lead: {
          name: "Lead",
          permissions: ["view", "edit"],
          granted_to: {
            users_with_role: [{ role: "admin", on_resource: "account", linked_by_relation: "account" }],
          },
        },
      },
    });
    assert.equal(res.status, 200, String(res.body));
    const project = res.json;
    res = await call(acme.adminKey, "POST", `${S}/resources/document/relations`, {
      key: "project",
      name: "Project",
      subject_resource: "project",
    });
    assert.equal(res.status, 200, String(res.body));
    res = await call(acme.adminKey, "POST", `${S}/resources/document/roles/reader/implicit_grants`, {
      role: "lead",
      on_resource: "project",
      linked_by_relation: "project",
    });
    assert.equal(res.status, 200, String(res.body));
    res = await call(acme.adminKey, "POST", `${S}/roles`, {
      key: "pm",
      name: "PM",
      permissions: ["project:view", "folder:read"],
    });
    const users = await call(acme.adminKey, "POST", `${S}/condition_sets`, { key: "staff", name: "Staff" });
    assert.equal(users.status, 200, String(users.body));
    const sets = await call(acme.adminKey, "POST", `${S}/condition_sets`, {
      key: "open_projects",
      name: "Open",
      type: "resourceset",
      resource_id: "project",
      conditions: { allOf: [{ "resource.open": { equals: true } }] },
    });
    assert.equal(sets.status, 200, String(sets.body));
    const child = await call(acme.adminKey, "POST", `${S}/condition_sets`, {
      key: "open_child",
      name: "Child",
      type: "resourceset",
      parent_id: "open_projects",
    });
    assert.equal(child.status, 200, String(child.body));
    const tenant = await db
      .selectFrom("tenants")
      .select("id")
      .where("environment_id", "=", envId)
      .where("key", "=", "default")
      .executeTakeFirstOrThrow();
    const scoped = { organization_id: acme.id, project_id: acme.projectId, environment_id: envId };
    const at = new Date().toISOString();
    const userId = crypto.randomUUID();
    await db
      .insertInto("users")
      .values({
        id: userId,
        ...scoped,
        key: "u1",
        email: null,
        first_name: null,
        last_name: null,
        attributes: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    const instance = (id: string, resourceId: string, key: string) => ({
      id,
      ...scoped,
      resource_id: resourceId,
      tenant_id: tenant.id,
      key,
      attributes: null,
      created_at: at,
      updated_at: at,
    });
    const p1 = crypto.randomUUID();
    const d1 = crypto.randomUUID();
    await db
      .insertInto("resource_instances")
      .values([instance(p1, project.id, "p1"), instance(d1, folder.id, "d1")])
      .execute();
    const docRelation = await db
      .selectFrom("relations")
      .select("id")
      .where("environment_id", "=", envId)
      .where("key", "=", "project")
      .executeTakeFirstOrThrow();
    await db
      .insertInto("relationship_tuples")
      .values({
        id: crypto.randomUUID(),
        ...scoped,
        subject_id: p1,
        relation_id: docRelation.id,
        object_id: d1,
        tenant_id: tenant.id,
        created_at: at,
        updated_at: at,
      })
      .execute();
    await db
      .insertInto("role_assignments")
      .values({
        id: crypto.randomUUID(),
        ...scoped,
        user_id: userId,
        role_id: project.roles.lead.id,
        tenant_id: tenant.id,
        resource_instance_id: p1,
        created_at: at,
      })
      .execute();
    await db
      .insertInto("condition_set_rules")
      .values({
        id: crypto.randomUUID(),
        ...scoped,
        key: "r1",
        user_set_id: users.json.id,
        action_id: project.actions.view.id,
        resource_set_id: child.json.id,
        created_at: at,
        updated_at: at,
      })
      .execute();

    const before = await revisionOf(e, envId);
    res = await call(acme.adminKey, "DELETE", `${S}/resources/project`);
    assert.equal(res.status, 204, String(res.body));
    assert.equal(res.headers["x-gatehouse-revision"], String(before + 1));

    assert.equal((await call(acme.adminKey, "GET", `${S}/resources/project`)).status, 404);
    const document = (await call(acme.adminKey, "GET", `${S}/resources/document`)).json;
    assert.equal(document.relations.project, undefined, "relations whose subject was deleted are gone");
    assert.deepEqual(document.roles.reader.granted_to.users_with_role, []);
    const accountAfter = (await call(acme.adminKey, "GET", `${S}/resources/account`)).json;
    assert.deepEqual(Object.keys(accountAfter.roles).sort(), ["admin", "member"]);
    assert.deepEqual((await call(acme.adminKey, "GET", `${S}/roles/pm`)).json.permissions, ["folder:read"]);
    assert.equal((await call(acme.adminKey, "GET", `${S}/condition_sets/open_projects`)).status, 404);
    assert.equal((await call(acme.adminKey, "GET", `${S}/condition_sets/open_child`)).status, 404);
    assert.equal((await call(acme.adminKey, "GET", `${S}/condition_sets/staff`)).status, 200);
    for (const table of ["relationship_tuples", "role_assignments", "condition_set_rules"] as const) {
      const n = await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("environment_id", "=", envId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 0, `${table} cascaded`);
    }
    const left = await db
      .selectFrom("resource_instances")
      .select("key")
      .where("environment_id", "=", envId)
      .execute();
    assert.deepEqual(
      left.map((r) => r.key),
      ["d1"],
    );

    const records = await readChangesAfter(db, envId, before, 100);
    assert.ok(
      records.every((r) => r.revision === before + 1),
      "one write, one revision",
    );
    const summary = records.map((r) => `${r.kind} ${r.op} ${(r.data as { key?: string }).key ?? ""}`.trim());
    assert.deepEqual(summary.sort(), [
      "condition_set delete open_child",
      "condition_set delete open_projects",
      "condition_set_rule delete",
      "resource delete project",
      "resource upsert document",
      "role upsert pm",
    ]);
    assert.deepEqual(records.find((r) => r.kind === "condition_set_rule")?.data, {
      user_set: "staff",
      permission: "project:view",
      resource_set: "open_child",
    });
    const documentRecord = records.find((r) => r.kind === "resource" && r.op === "upsert");
    assert.deepEqual(normalResource(documentRecord?.data as never), resourceDataOfRead(document));
  });

  test("environments and organizations never see each other's schema", async () => {
    const { acme, globex, call } = env();
    const dev = schemaUrl(acme, "development");
    assert.deepEqual((await call(acme.adminKey, "GET", `${dev}/resources`)).json, []);
    const res = await call(acme.adminKey, "POST", `${dev}/resources`, {
      ...ACCOUNT,
      actions: { only_dev: {} },
      roles: {},
    });
    assert.equal(res.status, 200, "the same key is free in another environment");
    assert.deepEqual(Object.keys(res.json.actions), ["only_dev"]);
    assert.equal((await call(acme.adminKey, "GET", `${dev}/resources/${folder.id}`)).status, 404);
    assert.equal((await call(acme.adminKey, "GET", `${S}/resources/account`)).json.id, account.id);
    const g = schemaUrl(globex);
    assert.deepEqual((await call(globex.adminKey, "GET", `${g}/resources`)).json, []);
    assert.equal((await call(globex.adminKey, "GET", `${g}/resources/${folder.id}`)).status, 404);
    assert.equal((await call(globex.adminKey, "GET", `${S}/resources`)).status, 404);
    assert.equal((await call(globex.adminKey, "DELETE", `${S}/resources/folder`)).status, 404);
    assert.equal((await call(acme.adminKey, "GET", `${S}/resources/folder`)).status, 200);
  });

  test("the change feed, replayed, describes exactly what the API reads", async () => {
    const e = env();
    await assertFeedMatchesApi(e, e.acme, "production");
    await assertFeedMatchesApi(e, e.acme, "development");
    const state = await replayFeed(e, envId);
    const got = await e.call(e.acme.adminKey, "GET", `${S}/resources/folder`);
    assert.deepEqual(normalResource(state.resources["folder"] as never), resourceDataOfRead(got.json));
  });
});
