import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readChangesAfter } from "../helpers/changes.ts";
import { describeEachDialect } from "../helpers/app.ts";
import { assertFeedMatchesApi, expectRejected, revisionOf, schemaUrl } from "../helpers/schema-api.ts";

const ACTIONS = Array.from({ length: 50 }, (_, i) => `a${i + 1}`);
const ROLES = Array.from({ length: 10 }, (_, i) => `r${i + 1}`);

describeEachDialect("schema API: POST /bulk/role_permissions (Gatehouse extension)", (env) => {
  let S = "";
  let envId = "";

  before(async () => {
    const { acme, call } = env();
    S = schemaUrl(acme);
    envId = acme.envs.production;
    const res = await call(acme.adminKey, "POST", `${S}/resources`, {
      key: "doc",
      name: "Doc",
      actions: Object.fromEntries(ACTIONS.map((a) => [a, {}])),
      roles: { owner: { name: "Owner", permissions: ["a1"] } },
    });
    assert.equal(res.status, 200, String(res.body));
    for (const key of ROLES) {
      const role = await call(acme.adminKey, "POST", `${S}/roles`, { key, name: key });
      assert.equal(role.status, 200, String(role.body));
    }
    // The other organization has the same keys: a batch here must not reach it.
    const other = await call(env().globex.adminKey, "POST", `${schemaUrl(env().globex)}/roles`, {
      key: "r1",
      name: "r1",
    });
    assert.equal(other.status, 200, String(other.body));
  });

  test("10 tenant roles x 50 actions and a resource role change in one call, one revision", async () => {
    const e = env();
    const { acme, call } = e;
    const before = await revisionOf(e, envId);
    const res = await call(acme.adminKey, "POST", `${S}/bulk/role_permissions`, {
      operations: [
        ...ROLES.map((role) => ({ role, grant: ACTIONS.map((a) => `doc:${a}`) })),
        { resource: "doc", role: "owner", grant: ["a2", "doc:a3"], revoke: ["a1"] },
      ],
    });
    assert.equal(res.status, 200, String(res.body));
    assert.deepEqual(res.json, { updated: [...ROLES, "doc:owner"] });
    for (const key of ROLES) {
      const role = (await call(acme.adminKey, "GET", `${S}/roles/${key}`)).json;
      assert.deepEqual([...role.permissions].sort(), ACTIONS.map((a) => `doc:${a}`).sort());
    }
    const owner = (await call(acme.adminKey, "GET", `${S}/resources/doc/roles/owner`)).json;
    assert.deepEqual([...owner.permissions].sort(), ["a2", "a3"]);
    const records = await readChangesAfter(e.store.db, envId, before, 100);
    assert.equal(new Set(records.map((r) => r.revision)).size, 1, "one revision for the whole batch");
    assert.equal((await revisionOf(e, envId)) - before, 1);
    const globex = (await call(e.globex.adminKey, "GET", `${schemaUrl(e.globex)}/roles/r1`)).json;
    assert.deepEqual(globex.permissions, []);
    await assertFeedMatchesApi(e, acme, "production");
  });

  test("revokes, and granting what is held or revoking what is not is no error", async () => {
    const { acme, call } = env();
    const res = await call(acme.adminKey, "POST", `${S}/bulk/role_permissions`, {
      operations: [
        { role: "r1", revoke: ACTIONS.slice(10).map((a) => `doc:${a}`), grant: ["doc:a1"] },
        { role: "r2", revoke: ["doc:a50"] },
        { role: "r2", revoke: ["doc:a50"] },
      ],
    });
    assert.equal(res.status, 200, String(res.body));
    assert.deepEqual(res.json, { updated: ["r1", "r2"] });
    const r1 = (await call(acme.adminKey, "GET", `${S}/roles/r1`)).json;
    assert.equal(r1.permissions.length, 10);
    const r2 = (await call(acme.adminKey, "GET", `${S}/roles/r2`)).json;
    assert.equal(r2.permissions.length, 49);
  });

  test("a refused batch changes nothing: a missing role, an unknown action, a conflict, bad input", async () => {
    const e = env();
    const { acme, call } = e;
    const post = (operations: unknown) => () =>
      call(acme.adminKey, "POST", `${S}/bulk/role_permissions`, { operations });
    // The first operations are valid: they must not be applied either.
    const valid = { role: "r3", revoke: ["doc:a1", "doc:a2"] };
    let res = await expectRejected(e, envId, 404, post([valid, { role: "gone", grant: ["doc:a1"] }]));
    assert.match(res.json.message, /gone/);
    res = await expectRejected(e, envId, 404, post([valid, { role: "r4", grant: ["doc:nope"] }]));
    assert.match(res.json.message, /nope/);
    await expectRejected(e, envId, 404, post([valid, { resource: "doc", role: "r4", grant: ["a1"] }]));
    await expectRejected(e, envId, 404, post([valid, { resource: "nothing", role: "owner", grant: ["a1"] }]));
    await expectRejected(
      e,
      envId,
      422,
      post([valid, { resource: "doc", role: "owner", grant: ["other:a1"] }]),
    );
    await expectRejected(e, envId, 422, post([{ role: "r4", grant: ["doc:a1"], revoke: ["doc:a1"] }]));
    await expectRejected(e, envId, 422, post([{ role: "r4", grant: ["no-colon"] }]));
    await expectRejected(e, envId, 422, post([]));
    await expectRejected(e, envId, 422, post([{ grant: ["doc:a1"] }]));
    const r3 = (await call(acme.adminKey, "GET", `${S}/roles/r3`)).json;
    assert.equal(r3.permissions.length, 50);
    // Another organization's key cannot reach these roles.
    res = await call(e.globex.adminKey, "POST", `${S}/bulk/role_permissions`, { operations: [valid] });
    assert.ok(res.status === 403 || res.status === 404, String(res.body));
  });
});
