import { test, before } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import {
  assertPermit,
  expectEachRejected,
  expectFeed,
  expectNothingWritten,
  factsUrl,
  seedStandard,
} from "../helpers/facts.ts";
import type { SeededSchema } from "../helpers/seed-schema.ts";

describeEachDialect("facts: condition set rules", (env) => {
  let F = "";
  let seeded: Record<string, SeededSchema> = {};
  before(async () => {
    seeded = await seedStandard(env());
    F = factsUrl(env().acme);
  });

  test("create returns an array with the rule; one revision", async () => {
    const e = env();
    const body = { user_set: "us_users", permission: "document:read", resource_set: "secret_docs" };
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "POST", `${F}/set_rules`, body),
      [{ kind: "condition_set_rule", op: "upsert", data: body }],
    );
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.json));
    assert.equal(res.json.length, 1);
    const rule = res.json[0];
    assert.deepEqual(Object.keys(rule).sort(), [
      "created_at",
      "environment_id",
      "id",
      "key",
      "organization_id",
      "permission",
      "project_id",
      "resource_set",
      "updated_at",
      "user_set",
    ]);
    assert.equal(rule.user_set, "us_users");
    assert.equal(rule.permission, "document:read");
    assert.equal(rule.resource_set, "secret_docs");
    assertPermit("post", "/set_rules", 200, res.json);
    // Condition sets may also be named by id.
    const byId = await e.call(e.acme.adminKey, "POST", `${F}/set_rules`, {
      user_set: seeded["acmeProd"]?.conditionSets["eu_users"],
      permission: "document:write",
      resource_set: seeded["acmeProd"]?.conditionSets["secret_docs"],
    });
    assert.equal(byId.status, 200, String(byId.body));
    assert.equal(byId.json[0].user_set, "eu_users");
    const folders = await e.call(e.acme.adminKey, "POST", `${F}/set_rules`, {
      user_set: "us_users",
      permission: "folder:read",
      resource_set: "shared_folders",
    });
    assert.equal(folders.status, 200, String(folders.body));
  });

  test("bad rules: 404/409/422 naming the problem, nothing written", async () => {
    const e = env();
    const ok = { user_set: "us_users", permission: "document:delete", resource_set: "secret_docs" };
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ ...ok, user_set: "nobody_set" }, 404, /user set 'nobody_set'/],
      [{ ...ok, resource_set: "nothing" }, 404, /resource set 'nothing'/],
      [{ ...ok, user_set: "secret_docs" }, 422, /not a userset/],
      [{ ...ok, resource_set: "us_users" }, 422, /not a resourceset/],
      [{ ...ok, permission: "delete" }, 422, /resource:action/],
      [{ ...ok, permission: "starship:fly" }, 404, /resource 'starship'/],
      [{ ...ok, permission: "document:fly" }, 404, /action 'fly'.*document/],
      [{ ...ok, permission: "folder:read" }, 422, /not a set of 'folder'/],
      [{ ...ok, permission: "document:read" }, 409, /already exists/],
      [{ ...ok, is_role: true }, 422, /not supported/],
      [{ user_set: "us_users", permission: "document:read" }, 422, /resource_set/],
    ];
    await expectEachRejected(e, `${F}/set_rules`, cases);
  });

  test("list: an array, filtered by user_set, permission and resource_set", async () => {
    const { acme, call } = env();
    const list = async (q: string) => {
      const res = await call(acme.adminKey, "GET", `${F}/set_rules?${q}`);
      assert.equal(res.status, 200, String(res.body));
      assertPermit("get", "/set_rules", 200, res.json);
      return res.json
        .map((r: { user_set: string; permission: string }) => `${r.user_set}/${r.permission}`)
        .sort();
    };
    assert.deepEqual(await list(""), [
      "eu_users/document:write",
      "us_users/document:read",
      "us_users/folder:read",
    ]);
    assert.deepEqual(await list("user_set=us_users"), ["us_users/document:read", "us_users/folder:read"]);
    assert.deepEqual(await list("permission=document:write"), ["eu_users/document:write"]);
    assert.deepEqual(await list("resource_set=shared_folders"), ["us_users/folder:read"]);
    assert.deepEqual(await list("user_set=nobody"), []);
    assert.deepEqual(await list("permission=document:fly"), []);
    assert.equal((await list("per_page=1&page=3")).length, 1);
    assert.deepEqual(await list("per_page=1&page=4"), []);
    assert.equal((await call(acme.adminKey, "GET", `${F}/set_rules?per_page=101`)).status, 422);
    assert.deepEqual((await call(acme.adminKey, "GET", `${F}/set_rules?page=9`)).json, []);
  });

  test("delete: 204, then 404", async () => {
    const e = env();
    const body = { user_set: "eu_users", permission: "document:write", resource_set: "secret_docs" };
    const res = await expectFeed(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/set_rules`, body),
      [{ kind: "condition_set_rule", op: "delete", data: body }],
    );
    assert.equal(res.status, 204);
    const again = await expectNothingWritten(
      e,
      e.acme.envs.production,
      () => e.call(e.acme.adminKey, "DELETE", `${F}/set_rules`, body),
      404,
    );
    assert.match(again.json.message, /condition set rule/);
  });

  test("environments and organizations do not see each other's rules", async () => {
    const { acme, globex, call } = env();
    assert.deepEqual(
      (await call(acme.adminKey, "GET", `${factsUrl(acme, "development")}/set_rules`)).json,
      [],
    );
    assert.deepEqual((await call(globex.adminKey, "GET", `${factsUrl(globex)}/set_rules`)).json, []);
    // acme production's condition set ids mean nothing in acme development.
    const devCreate = await call(acme.adminKey, "POST", `${factsUrl(acme, "development")}/set_rules`, {
      user_set: seeded["acmeProd"]?.conditionSets["us_users"],
      permission: "document:read",
      resource_set: "secret_docs",
    });
    assert.equal(devCreate.status, 404);
    const crossing = await call(globex.adminKey, "GET", `${F}/set_rules`);
    assert.ok(crossing.status === 403 || crossing.status === 404);
  });
});
