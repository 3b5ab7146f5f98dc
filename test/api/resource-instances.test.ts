import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import {
  TIMESTAMP_RE,
  assertPermit,
  expectEachRejected,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  postTenants,
  seedStandard,
} from "../helpers/facts.ts";

describeEachDialect("facts: resource instances", (env) => {
  let F = "";
  before(async () => {
    const e = env();
    await seedStandard(e);
    F = factsUrl(e.acme);
    await postTenants(e, F, ["t1", "t2"]);
  });

  test("create: 201 with keys and ids, attributes {} by default, one revision", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/resource_instances`, {
          key: "report",
          resource: "document",
          tenant: "t1",
          attributes: { pages: 3, secret: false },
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: {
            resource: "document",
            key: "report",
            tenant: "t1",
            attributes: { pages: 3, secret: false },
          },
        },
      ],
    );
    assert.equal(res.status, 201);
    assertPermit("post", "/resource_instances", 200, res.json);
    const i = res.json;
    assert.deepEqual(Object.keys(i).sort(), [
      "attributes",
      "created_at",
      "environment_id",
      "id",
      "key",
      "organization_id",
      "project_id",
      "resource",
      "resource_id",
      "tenant",
      "tenant_id",
      "updated_at",
    ]);
    assert.equal(i.resource, "document");
    assert.equal(i.tenant, "t1");
    assert.match(i.created_at, TIMESTAMP_RE);
    const tenant = (await e.call(e.acme.adminKey, "GET", `${F}/tenants/t1`)).json;
    assert.equal(i.tenant_id, tenant.id);
    const bare = await e.call(e.acme.adminKey, "POST", `${F}/resource_instances`, {
      key: "inbox",
      resource: "folder",
      tenant: tenant.id,
    });
    assert.equal(bare.status, 201);
    assert.deepEqual(bare.json.attributes, {});
    assert.equal(bare.json.tenant, "t1");
  });

  test("unknown resource or tenant: 404; bad key: 422; duplicate: 409; nothing written", async () => {
    const e = env();
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ key: "x", resource: "starship", tenant: "t1" }, 404, /resource 'starship'/],
      [{ key: "x", resource: "document", tenant: "nowhere" }, 404, /tenant 'nowhere'/],
      [{ key: "report", resource: "document", tenant: "t2" }, 409, /document:report/],
      [{ key: "a:b", resource: "document", tenant: "t1" }, 422, /key/],
      [{ key: "a b", resource: "document", tenant: "t1" }, 422, /key/],
      [{ key: "x", resource: "document" }, 422, /tenant/],
    ];
    await expectEachRejected(e, `${F}/resource_instances`, cases);
  });

  test("get by id, by type:key (URL-encoded) and by an unambiguous key; 422 when ambiguous; 404", async () => {
    const { acme, call } = env();
    const byName = await call(acme.adminKey, "GET", `${F}/resource_instances/document%3Areport`);
    assert.equal(byName.status, 200);
    assertPermit("get", "/resource_instances/{instance_id}", 200, byName.json);
    assert.deepEqual(
      (await call(acme.adminKey, "GET", `${F}/resource_instances/${byName.json.id}`)).json,
      byName.json,
    );
    assert.deepEqual((await call(acme.adminKey, "GET", `${F}/resource_instances/report`)).json, byName.json);
    assert.deepEqual(
      (await call(acme.adminKey, "GET", `${F}/resource_instances/document:report`)).json,
      byName.json,
    );
    assert.equal(
      (
        await call(acme.adminKey, "POST", `${F}/resource_instances`, {
          key: "report",
          resource: "folder",
          tenant: "t2",
        })
      ).status,
      201,
    );
    const ambiguous = await call(acme.adminKey, "GET", `${F}/resource_instances/report`);
    assert.equal(ambiguous.status, 422);
    assert.match(ambiguous.json.message, /ambiguous/);
    assert.equal((await call(acme.adminKey, "GET", `${F}/resource_instances/document%3Aghost`)).status, 404);
    const unknownType = await call(acme.adminKey, "GET", `${F}/resource_instances/starship%3Ax`);
    assert.equal(unknownType.status, 404);
    assert.match(unknownType.json.message, /resource 'starship'/);
  });

  test("detailed: the tuples the instance is part of", async () => {
    const { acme, call } = env();
    const tuple = await call(acme.adminKey, "POST", `${F}/relationship_tuples`, {
      subject: "folder:inbox",
      relation: "parent",
      object: "document:report",
    });
    assert.equal(tuple.status, 200, String(tuple.body));
    const expected = [{ subject: "folder:inbox", relation: "parent", object: "document:report" }];
    const doc = await call(acme.adminKey, "GET", `${F}/resource_instances/document%3Areport?detailed=true`);
    assert.deepEqual(doc.json.relationships, expected);
    assertPermit("get", "/resource_instances/{instance_id}", 200, doc.json);
    const folder = await call(acme.adminKey, "GET", `${F}/resource_instances/folder%3Ainbox?detailed=true`);
    assert.deepEqual(folder.json.relationships, expected);
    const plain = await call(acme.adminKey, "GET", `${F}/resource_instances/folder%3Ainbox`);
    assert.equal("relationships" in plain.json, false);
  });

  test("list: array or envelope, filters by tenant, resource and search, pagination bounds", async () => {
    const { acme, call } = env();
    const names = async (q: string) => {
      const res = await call(acme.adminKey, "GET", `${F}/resource_instances?${q}`);
      assert.equal(res.status, 200, String(res.body));
      assert.ok(Array.isArray(res.json));
      return res.json.map((i: { resource: string; key: string }) => `${i.resource}:${i.key}`).sort();
    };
    assert.deepEqual(await names(""), ["document:report", "folder:inbox", "folder:report"]);
    assert.deepEqual(await names("tenant=t2"), ["folder:report"]);
    assert.deepEqual(await names("resource=folder"), ["folder:inbox", "folder:report"]);
    assert.deepEqual(await names("resource=folder&tenant=t1"), ["folder:inbox"]);
    assert.deepEqual(await names("search=report"), ["document:report", "folder:report"]);
    assert.deepEqual(await names("search=inbox&search=nothing"), ["folder:inbox"]);
    assert.deepEqual(await names("tenant=nowhere"), []);
    assert.deepEqual(await names("resource=starship"), []);
    const all = await call(acme.adminKey, "GET", `${F}/resource_instances`);
    assertPermit("get", "/resource_instances", 200, all.json);
    const id = all.json.find(
      (i: { key: string; resource: string }) => i.resource === "folder" && i.key === "inbox",
    ).id;
    assert.deepEqual(await names(`search=${id}`), ["folder:inbox"]);

    const paged = await call(
      acme.adminKey,
      "GET",
      `${F}/resource_instances?include_total_count=true&per_page=2`,
    );
    assert.equal(paged.json.total_count, 3);
    assert.equal(paged.json.page_count, 2);
    assert.equal(paged.json.data.length, 2);
    assertPermit("get", "/resource_instances", 200, paged.json);
    const past = await call(
      acme.adminKey,
      "GET",
      `${F}/resource_instances?include_total_count=true&per_page=2&page=3`,
    );
    assert.deepEqual(past.json, { data: [], total_count: 3, page_count: 2 });
    const detailed = await call(
      acme.adminKey,
      "GET",
      `${F}/resource_instances?detailed=true&resource=document`,
    );
    assert.deepEqual(detailed.json[0].relationships, [
      { subject: "folder:inbox", relation: "parent", object: "document:report" },
    ]);
    const endpoint = await call(acme.adminKey, "GET", `${F}/resource_instances/detailed?resource=folder`);
    assert.equal(endpoint.json.total_count, 2);
    assertPermit("get", "/resource_instances/detailed", 200, endpoint.json);
    assert.equal((await call(acme.adminKey, "GET", `${F}/resource_instances?per_page=101`)).status, 422);
  });

  test("patch replaces the attributes", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "PATCH", `${F}/resource_instances/document%3Areport`, {
          attributes: { pages: 4 },
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "report", tenant: "t1", attributes: { pages: 4 } },
        },
      ],
    );
    assert.deepEqual(res.json.attributes, { pages: 4 });
    assertPermit("patch", "/resource_instances/{instance_id}", 200, res.json);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "PATCH", `${F}/resource_instances/document%3Aghost`, { attributes: {} }),
      404,
    );
  });

  test("delete cascades to the instance's tuples and role assignments", async () => {
    const e = env();
    assert.equal(
      (
        await e.call(e.acme.adminKey, "POST", `${F}/users`, {
          key: "reader",
          role_assignments: [{ role: "viewer", resource_instance: "document:report" }],
        })
      ).status,
      201,
    );
    const id = (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Areport`)).json.id;
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/resource_instances/${id}`),
      [{ kind: "resource_instance", op: "delete", data: { resource: "document", key: "report" } }],
    );
    assert.equal(res.status, 204);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/relationship_tuples`)).json, []);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/role_assignments?user=reader`)).json, []);
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/folder%3Ainbox`)).status,
      200,
    );
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/resource_instances/${id}`),
      404,
    );
  });

  test("environments and organizations do not see each other's instances", async () => {
    const { acme, globex, call } = env();
    const dev = factsUrl(acme, "development");
    assert.deepEqual((await call(acme.adminKey, "GET", `${dev}/resource_instances`)).json, []);
    assert.equal((await call(acme.adminKey, "GET", `${dev}/resource_instances/folder%3Ainbox`)).status, 404);
    const id = (await call(acme.adminKey, "GET", `${F}/resource_instances/folder%3Ainbox`)).json.id;
    assert.equal((await call(acme.adminKey, "GET", `${dev}/resource_instances/${id}`)).status, 404);
    assert.equal(
      (await call(globex.adminKey, "GET", `${factsUrl(globex)}/resource_instances/${id}`)).status,
      404,
    );
    const crossing = await call(globex.adminKey, "GET", `${F}/resource_instances`);
    assert.ok(crossing.status === 403 || crossing.status === 404);
  });
});
