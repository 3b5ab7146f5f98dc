import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertPermit,
  expectEachRejected,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  postTenants,
  seedStandard,
} from "../helpers/facts.ts";

describeEachDialect("facts: relationship tuples", (env) => {
  let F = "";
  before(async () => {
    const e = env();
    await seedStandard(e);
    F = factsUrl(e.acme);
    await postTenants(e, F, ["t1", "t2"]);
    const instance = (key: string, resource: string, tenant: string) =>
      e.call(e.acme.adminKey, "POST", `${F}/resource_instances`, { key, resource, tenant });
    assert.equal((await instance("root", "folder", "t1")).status, 201);
    assert.equal((await instance("other-root", "folder", "t2")).status, 201);
  });

  test("create: missing instances are created in the tuple's tenant, one revision", async () => {
    const e = env();
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", `${F}/relationship_tuples`, {
          subject: "folder:sub",
          relation: "parent",
          object: "document:doc1",
          tenant: "t1",
        }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "folder", key: "sub", tenant: "t1", attributes: {} },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "doc1", tenant: "t1", attributes: {} },
        },
        {
          kind: "relationship_tuple",
          op: "upsert",
          data: { subject: "folder:sub", relation: "parent", object: "document:doc1", tenant: "t1" },
        },
      ],
    );
    assert.equal(res.status, 200);
    assertPermit("post", "/relationship_tuples", 200, res.json);
    const t = res.json;
    assert.equal(t.subject, "folder:sub");
    assert.equal(t.relation, "parent");
    assert.equal(t.object, "document:doc1");
    assert.equal(t.tenant, "t1");
    const doc = (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Adoc1`)).json;
    assert.equal(doc.tenant, "t1");
    assert.equal(t.object_id, doc.id);
    assert.equal(t.tenant_id, doc.tenant_id);
  });

  test("without a tenant: the existing instances' tenant", async () => {
    const { acme, call } = env();
    const res = await call(acme.adminKey, "POST", `${F}/relationship_tuples`, {
      subject: "folder:root",
      relation: "parent",
      object: "document:doc2",
    });
    assert.equal(res.status, 200, String(res.body));
    assert.equal(res.json.tenant, "t1");
    assert.equal(
      (await call(acme.adminKey, "GET", `${F}/resource_instances/document%3Adoc2`)).json.tenant,
      "t1",
    );
  });

  test("bad tuples: 404/409/422 naming the problem, nothing written (not even instances)", async () => {
    const e = env();
    const cases: [Record<string, string>, number, RegExp][] = [
      [
        { subject: "folder:x", relation: "owner", object: "document:y", tenant: "t1" },
        404,
        /relation 'owner'.*document/,
      ],
      [
        { subject: "folder:x", relation: "parent", object: "starship:y", tenant: "t1" },
        404,
        /resource 'starship'/,
      ],
      [
        { subject: "document:x", relation: "parent", object: "document:y", tenant: "t1" },
        422,
        /subjects of type 'folder'/,
      ],
      [
        { subject: "folder:x", relation: "parent", object: "document:y", tenant: "nowhere" },
        404,
        /tenant 'nowhere'/,
      ],
      [{ subject: "folder:x", relation: "parent", object: "document:y" }, 422, /tenant is required/],
      [
        { subject: "folder:other-root", relation: "parent", object: "document:doc1" },
        422,
        /belongs to tenant/,
      ],
      [
        { subject: "folder:root", relation: "parent", object: "document:y", tenant: "t2" },
        422,
        /belongs to tenant 't1'/,
      ],
      [{ subject: "folder:root", relation: "parent", object: "document:doc2" }, 409, /already exists/],
      [
        { subject: "folder:bad key", relation: "parent", object: "document:y", tenant: "t1" },
        422,
        /must match/,
      ],
      [{ subject: "nokind", relation: "parent", object: "document:y", tenant: "t1" }, 404, /nokind/],
    ];
    await expectEachRejected(e, `${F}/relationship_tuples`, cases);
  });

  test("list: filters, detailed, include_total_count, pagination", async () => {
    const { acme, call } = env();
    assert.equal(
      (
        await call(acme.adminKey, "POST", `${F}/relationship_tuples`, {
          subject: "folder:other-root",
          relation: "parent",
          object: "document:doc3",
        })
      ).status,
      200,
    );
    const names = async (q: string) => {
      const res = await call(acme.adminKey, "GET", `${F}/relationship_tuples?${q}`);
      assert.equal(res.status, 200, String(res.body));
      return res.json.map((t: { subject: string; object: string }) => `${t.subject}>${t.object}`).sort();
    };
    const all = ["folder:other-root>document:doc3", "folder:root>document:doc2", "folder:sub>document:doc1"];
    assert.deepEqual(await names(""), all);
    assert.deepEqual(await names("tenant=t2"), ["folder:other-root>document:doc3"]);
    assert.deepEqual(await names("subject=folder%3Aroot"), ["folder:root>document:doc2"]);
    assert.deepEqual(await names("object=document:doc1"), ["folder:sub>document:doc1"]);
    assert.deepEqual(await names("relation=parent"), all);
    assert.deepEqual(await names("object_type=document&subject_type=folder"), all);
    assert.deepEqual(await names("object_type=folder"), []);
    assert.deepEqual(await names("subject_type=document"), []);
    assert.deepEqual(await names("relation=owner"), []);
    assert.deepEqual(await names("tenant=nowhere"), []);
    assert.deepEqual(await names("subject=folder%3Aghost"), []);

    const plain = await call(acme.adminKey, "GET", `${F}/relationship_tuples?tenant=t2`);
    assert.equal(plain.json[0].subject_details, undefined);
    assertPermit("get", "/relationship_tuples", 200, plain.json);
    const detailed = await call(acme.adminKey, "GET", `${F}/relationship_tuples?tenant=t2&detailed=true`);
    const d = detailed.json[0];
    assert.deepEqual(d.subject_details, {
      key: "other-root",
      tenant: "t2",
      resource: "folder",
      attributes: {},
    });
    assert.deepEqual(d.object_details, { key: "doc3", tenant: "t2", resource: "document", attributes: {} });
    assert.deepEqual(d.relation_details, { key: "parent", name: "parent" });
    assert.deepEqual(d.tenant_details, { key: "t2", name: "t2", attributes: {} });
    assertPermit("get", "/relationship_tuples", 200, detailed.json);
    const endpoint = await call(acme.adminKey, "GET", `${F}/relationship_tuples/detailed?tenant=t2`);
    assert.deepEqual(endpoint.json, { data: detailed.json, total_count: 1, page_count: 1 });
    assertPermit("get", "/relationship_tuples/detailed", 200, endpoint.json);

    const paged = await call(
      acme.adminKey,
      "GET",
      `${F}/relationship_tuples?include_total_count=true&per_page=2`,
    );
    assert.equal(paged.json.total_count, 3);
    assert.equal(paged.json.page_count, 2);
    assertPermit("get", "/relationship_tuples", 200, paged.json);
    const past = await call(
      acme.adminKey,
      "GET",
      `${F}/relationship_tuples?include_total_count=true&per_page=2&page=3`,
    );
    assert.deepEqual(past.json, { data: [], total_count: 3, page_count: 2 });
    assert.equal((await call(acme.adminKey, "GET", `${F}/relationship_tuples?per_page=101`)).status, 422);
  });

  test("delete: 204; a tuple that does not exist: 404", async () => {
    const e = env();
    const body = { subject: "folder:other-root", relation: "parent", object: "document:doc3" };
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/relationship_tuples`, body),
      [{ kind: "relationship_tuple", op: "delete", data: body }],
    );
    assert.equal(res.status, 204);
    const again = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/relationship_tuples`, body),
      404,
    );
    assert.match(again.json.message, /relationship tuple/);
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", `${F}/relationship_tuples`, { ...body, object: "document:ghost" }),
      404,
    );
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Adoc3`)).status,
      200,
    );
  });

  test("bulk create and delete: {} results, one revision, all or nothing", async () => {
    const e = env();
    const url = `${F}/relationship_tuples/bulk`;
    const ops = [
      { subject: "folder:b-root", relation: "parent", object: "document:b1", tenant: "t2" },
      { subject: "folder:b-root", relation: "parent", object: "document:b2", tenant: "t2" },
      { subject: "folder:root", relation: "parent", object: "document:doc2" },
    ];
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", url, { operations: ops }),
      [
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "folder", key: "b-root", tenant: "t2", attributes: {} },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "b1", tenant: "t2", attributes: {} },
        },
        {
          kind: "resource_instance",
          op: "upsert",
          data: { resource: "document", key: "b2", tenant: "t2", attributes: {} },
        },
        { kind: "relationship_tuple", op: "upsert", data: { ...ops[0] } },
        { kind: "relationship_tuple", op: "upsert", data: { ...ops[1] } },
      ],
    );
    assert.deepEqual(res.json, {});
    assertPermit("post", "/relationship_tuples/bulk", 200, res.json);

    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "POST", url, {
          operations: [
            { subject: "folder:b-root", relation: "parent", object: "document:b3", tenant: "t2" },
            { subject: "folder:b-root", relation: "nope", object: "document:b4", tenant: "t2" },
          ],
        }),
      404,
    );
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ ...ops[0], object: `document:n${i}` }));
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", url, { operations: tooMany }),
      422,
    );

    const idents = [
      { subject: "folder:b-root", relation: "parent", object: "document:b1" },
      { subject: "folder:b-root", relation: "parent", object: "document:b2" },
    ];
    await expectNothingWritten(
      e,
      e.acme.envs.production,
      () =>
        e.call(e.acme.adminKey, "DELETE", url, {
          idents: [...idents, { ...idents[0], object: "document:doc1" }],
        }),
      404,
    );
    const deleted = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", url, { idents }),
      idents.map((data) => ({ kind: "relationship_tuple", op: "delete", data })),
    );
    assert.deepEqual(deleted.json, {});
    assertPermit("delete", "/relationship_tuples/bulk", 200, deleted.json);
    assert.deepEqual((await e.call(e.acme.adminKey, "GET", `${F}/relationship_tuples?tenant=t2`)).json, []);
  });

  test("environments and organizations do not see each other's tuples", async () => {
    const { acme, globex, call } = env();
    assert.deepEqual(
      (await call(acme.adminKey, "GET", `${factsUrl(acme, "development")}/relationship_tuples`)).json,
      [],
    );
    assert.deepEqual(
      (await call(globex.adminKey, "GET", `${factsUrl(globex)}/relationship_tuples`)).json,
      [],
    );
    // The same names in another environment are other instances: creating there does not touch acme production.
    const dev = await call(acme.adminKey, "POST", `${factsUrl(acme, "development")}/relationship_tuples`, {
      subject: "folder:root",
      relation: "parent",
      object: "document:doc2",
      tenant: "default",
    });
    assert.equal(dev.status, 200, String(dev.body));
    assert.equal(dev.json.environment_id, acme.envs.development);
    assert.equal(
      (await call(acme.adminKey, "GET", `${F}/relationship_tuples?include_total_count=true`)).json
        .total_count,
      2,
    );
    const crossing = await call(globex.adminKey, "GET", `${F}/relationship_tuples`);
    assert.ok(crossing.status === 403 || crossing.status === 404);
  });
});
