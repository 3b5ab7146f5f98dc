import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { changesAfter, expectNothingWritten, factsUrl, revisionOf, seedStandard } from "../helpers/facts.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

/**
 * POST role_assignments/bulk reads a request's users, tenants, roles and existing assignments in one query each and
 * inserts its rows together: the answers, errors and change feed must stay what they were item by item.
 */
describeEachDialect("bulk import of role assignments (set-based)", (env) => {
  const USERS = 300;
  const TENANTS = ["t1", "t2", "t3"];
  let F = "";
  let pdp: TestPdp;
  let pdpKey = "";
  const user = (i: number) => `imp${i}`;

  before(async () => {
    const e = env();
    await seedStandard(e);
    F = factsUrl(e.acme);
    const bulkTenants = await e.call(e.acme.adminKey, "POST", `${F}/bulk/tenants`, {
      operations: TENANTS.map((key) => ({ key, name: key })),
    });
    assert.equal(bulkTenants.status, 200, bulkTenants.body);
    const bulkUsers = await e.call(e.acme.adminKey, "PUT", `${F}/bulk/users`, {
      operations: Array.from({ length: USERS }, (_, i) => ({ key: user(i) })),
    });
    assert.equal(bulkUsers.status, 200, bulkUsers.body);
    pdpKey = (await e.call(e.acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
    pdp = await startTestPdp(e);
    // Load the replica first, so that the import reaches it through the change feed.
    await pdp.call(pdpKey, "/allowed", { user: "nobody", action: "read", resource: "document" });
  });
  after(async () => {
    await pdp?.close();
  });

  const replica = async () => {
    const target = await pdp.pdp.resolve(`Bearer ${pdpKey}`, { headers: {} } as never);
    await target.replica.catchUp();
    return target.replica.engine;
  };
  const canRead = (engine: Awaited<ReturnType<typeof replica>>, key: string, tenant: string) =>
    engine.check({ user: { key }, action: "read", resource: { type: "document", tenant }, context: {} })
      .allow;

  test("one bad item in the middle of 600: 404 naming it, nothing written", async () => {
    const e = env();
    const items = Array.from({ length: 600 }, (_, i) => ({
      user: user(i % USERS),
      role: "viewer",
      tenant: TENANTS[Math.floor(i / USERS)] as string,
    }));
    const cases: [number, Record<string, string>, string, RegExp][] = [
      [317, { user: user(17), role: "viewer", tenant: "nowhere" }, "", /tenant 'nowhere'/],
      [401, { user: user(1), role: "nope", tenant: "t1" }, "", /role 'nope'/],
      [450, { user: "ghost", role: "viewer", tenant: "t1" }, "", /user 'ghost'/],
      // ignore skips a missing user but not a missing role
      [520, { user: user(2), role: "nope", tenant: "t2" }, "?missing_user_policy=ignore", /role 'nope'/],
    ];
    for (const [at, bad, query, message] of cases) {
      const body = [...items.slice(0, at), bad, ...items.slice(at)];
      const res = await expectNothingWritten(
        e,
        e.acme.envs.production,
        () => e.call(e.acme.adminKey, "POST", `${F}/role_assignments/bulk${query}`, body),
        404,
      );
      assert.match(res.json.message, message);
    }
    // the first bad item answers, as item by item
    const two = await e.call(e.acme.adminKey, "POST", `${F}/role_assignments/bulk`, [
      ...items.slice(0, 10),
      { user: "ghost", role: "viewer", tenant: "t1" },
      { user: user(1), role: "viewer", tenant: "nowhere" },
    ]);
    assert.equal(two.status, 404);
    assert.match(two.json.message, /user 'ghost'/);
    const engine = await replica();
    assert.equal(canRead(engine, user(0), "t1"), false, "nothing of a failed import reaches the PDP");
  });

  test("600 items: every new one written once, one revision, the PDP allows each", async () => {
    const e = env();
    const url = `${F}/role_assignments/bulk`;
    // an assignment that exists already is skipped
    const first = await e.call(e.acme.adminKey, "POST", url, [
      { user: user(5), role: "viewer", tenant: "t1" },
    ]);
    assert.deepEqual(first.json, { assignments_created: 1 });
    const items = Array.from({ length: 600 }, (_, i) => ({
      user: user(i % USERS),
      role: "viewer",
      tenant: TENANTS[Math.floor(i / USERS)] as string,
    }));
    const body = [
      ...items,
      // twice in one request: written once
      { user: user(7), role: "admin", tenant: "t3" },
      { user: user(7), role: "admin", tenant: "t3" },
      // an instance role, through the item-by-item path, beside the set-based one
      { user: user(8), role: "editor", resource_instance: "document:imported-doc", tenant: "t2" },
      // a user created by the policy, then given a role
      { user: "newcomer", role: "viewer", tenant: "t3" },
    ];
    const before = await revisionOf(e, e.acme.envs.production);
    const res = await e.call(e.acme.adminKey, "POST", `${url}?missing_user_policy=create`, body);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(res.json, { assignments_created: 600 - 1 + 1 + 1 + 1 });
    assert.equal(await revisionOf(e, e.acme.envs.production), before + 1);
    const records = await changesAfter(e, e.acme.envs.production, before);
    const upserts = records.filter((r) => r.kind === "role_assignment" && r.op === "upsert");
    assert.equal(upserts.length, 602);
    assert.deepEqual(
      records
        .filter((r) => r.kind !== "role_assignment")
        .map((r) => `${r.kind}:${String((r.data as { key?: string }).key)}`),
      ["resource_instance:imported-doc", "user:newcomer"],
    );
    const listed = await e.call(
      e.acme.adminKey,
      "GET",
      `${F}/role_assignments?role=viewer&per_page=1&include_total_count=true`,
    );
    assert.equal(listed.json.total_count, 601);

    const engine = await replica();
    for (const item of items)
      assert.equal(canRead(engine, item.user, item.tenant), true, JSON.stringify(item));
    assert.equal(canRead(engine, "newcomer", "t3"), true);
    assert.equal(canRead(engine, "newcomer", "t1"), false);
    assert.equal(
      engine.check({
        user: { key: user(8) },
        action: "write",
        resource: { type: "document", key: "imported-doc", tenant: "t2" },
        context: {},
      }).allow,
      true,
    );

    // the same import again creates nothing and adds no revision
    const again = await e.call(e.acme.adminKey, "POST", url, items);
    assert.deepEqual(again.json, { assignments_created: 0 });
    assert.equal(await revisionOf(e, e.acme.envs.production), before + 1);
  });
  test("expiries on the set-based path: carried by row and change record; an ended assignment is replaced", async () => {
    const e = env();
    const envId = e.acme.envs.production;
    const url = `${F}/role_assignments/bulk`;
    const stamp = (ms: number) => new Date(Date.now() + ms).toISOString().replace("Z", "+00:00");
    const later = stamp(3_600_000);
    const first = await e.call(e.acme.adminKey, "POST", url, [
      { user: user(20), role: "admin", tenant: "t1", expires_at: later },
      { user: user(21), role: "admin", tenant: "t1" },
    ]);
    assert.deepEqual(first.json, { assignments_created: 2 });
    // Time passes for user(20)'s assignment: its instant is moved into the past in the database.
    await e.store.db
      .updateTable("role_assignments")
      .set({ expires_at: stamp(-1000) })
      .where("environment_id", "=", envId)
      .where("expires_at", "=", later)
      .execute();
    const before = await revisionOf(e, envId);
    const again = await e.call(e.acme.adminKey, "POST", url, [
      { user: user(20), role: "admin", tenant: "t1" },
      { user: user(21), role: "admin", tenant: "t1" },
      { user: user(22), role: "admin", tenant: "t1", expires_at: later },
    ]);
    assert.deepEqual(again.json, { assignments_created: 2 });
    const base = { role: "admin", tenant: "t1", resource_instance: null };
    assert.deepEqual(
      (await changesAfter(e, envId, before)).map(({ kind, op, data }) => ({ kind, op, data })),
      [
        { kind: "role_assignment", op: "delete", data: { user: user(20), ...base } },
        { kind: "role_assignment", op: "upsert", data: { user: user(20), ...base } },
        { kind: "role_assignment", op: "upsert", data: { user: user(22), ...base, expires_at: later } },
      ],
    );
    const listed = await e.call(
      e.acme.adminKey,
      "GET",
      `${F}/role_assignments?role=admin&tenant=t1&user=${user(20)}&user=${user(21)}&user=${user(22)}`,
    );
    assert.deepEqual(
      listed.json.map((a: { user: string; expires_at?: string }) => [a.user, a.expires_at ?? null]).sort(),
      [
        [user(20), null],
        [user(21), null],
        [user(22), later],
      ],
    );
  });
});
