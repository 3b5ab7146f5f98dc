import { before, test } from "node:test";
import assert from "node:assert/strict";
import { readChangesAfter } from "../helpers/changes.ts";
import { createEngine, type Change } from "../../src/pdp/engine/index.ts";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { seedRichPolicy } from "../helpers/copy-policy.ts";

/** The engine a PDP of this environment holds: every change record of its feed, applied in order. */
async function engineOf(t: TestEnv, envId: string) {
  const engine = createEngine();
  for (const { kind, op, data } of await readChangesAfter(t.store.db, envId, 0, 1_000_000)) {
    engine.apply({ kind, op, data } as Change);
  }
  return engine;
}

const revisionOf = async (t: TestEnv, envId: string) =>
  Number(
    (
      await t.store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", envId)
        .executeTakeFirstOrThrow()
    ).revision,
  );

describeEachDialect("policy files", (env) => {
  const base = (t: TestEnv, envKey: string) => `/v2/schema/${t.acme.projectId}/${envKey}/policy`;
  let exported = "";

  before(async () => {
    const t = env();
    await seedRichPolicy(t.store.db, t.acme.envs.production);
    await seedRichPolicy(t.store.db, t.globex.envs.production);
  });

  test("export writes every kind of policy object, in key order, the same twice", async () => {
    const t = env();
    const res = await t.call(t.acme.adminKey, "GET", base(t, "production"));
    assert.equal(res.status, 200, res.body);
    exported = res.json.policy;
    assert.equal(typeof res.json.revision, "number");
    for (const part of [
      "resources:",
      "  document:",
      "    urn: prn:doc",
      "    type_attributes:",
      "      classification:",
      "    action_groups:",
      "      modify:",
      "        derived_from:",
      "            linked_by_relation: parent",
      "        extends:",
      "roles:",
      "user_attributes:",
      "  department:",
      "user_sets:",
      "    parent: us_users",
      "resource_sets:",
      "set_rules:",
      "  - user_set: us_users",
    ]) {
      assert.ok(exported.includes(`\n${part}`), `export has ${JSON.stringify(part)}:\n${exported}`);
    }
    assert.ok(exported.indexOf("  document:") < exported.indexOf("  folder:"), "resources sorted by key");
    const again = await t.call(t.acme.adminKey, "GET", base(t, "production"));
    assert.equal(again.json.policy, exported);
  });

  test("export → plan → apply into an empty environment → export gives the same bytes; the PDP decides the same", async () => {
    const t = env();
    const plan = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, {
      policy: exported,
    });
    assert.equal(plan.status, 200, plan.body);
    assert.ok(plan.json.summary.create > 0);
    assert.equal(plan.json.summary.delete, 0);
    assert.equal(plan.json.revision, await revisionOf(t, t.acme.envs.development));
    const before = plan.json.revision;
    const applied = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
      policy: exported,
      revision: before,
    });
    assert.equal(applied.status, 200, applied.body);
    assert.equal(applied.json.revision, before + 1, "one revision");
    const after = await t.call(t.acme.adminKey, "GET", base(t, "development"));
    assert.equal(after.json.policy, exported);
    const again = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, {
      policy: exported,
    });
    assert.deepEqual(again.json.changes, []);
    // Applying an unchanged file writes nothing.
    const noop = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
      policy: exported,
      revision: again.json.revision,
    });
    assert.equal(noop.json.revision, again.json.revision);

    // The rows were seeded without change records, so production's PDP knows nothing; development's follows the
    // apply: the tenant role admin (document read, write, delete; folder read) decides as the file says.
    const dev = await engineOf(t, t.acme.envs.development);
    dev.apply({ kind: "user", op: "upsert", data: { key: "u1", attributes: {} } } as Change);
    dev.apply({ kind: "tenant", op: "upsert", data: { key: "t1", attributes: {} } } as Change);
    dev.apply({
      kind: "role_assignment",
      op: "upsert",
      data: { user: "u1", role: "admin", tenant: "t1" },
    } as Change);
    const decisions = [
      "document:read",
      "document:write",
      "document:delete",
      "folder:read",
      "folder:create",
    ].map((p) => {
      const [type, action] = p.split(":") as [string, string];
      return `${p} ${dev.check({ user: { key: "u1" }, action, resource: { type, tenant: "t1" } }).allow}`;
    });
    assert.deepEqual(decisions, [
      "document:read true",
      "document:write true",
      "document:delete true",
      "folder:read true",
      "folder:create false",
    ]);
  });

  test("an edited file plans exactly its changes, applies them in one revision, and the PDP follows", async () => {
    const t = env();
    const edited = exported
      // remove a permission: the tenant role admin no longer deletes documents
      .replace("      - document:delete\n      - document:read", "      - document:read")
      // add a derivation: folder readers become document editors through parent
      .replace(
        "          - role: owner\n            on_resource: folder\n            linked_by_relation: parent\n            no_direct_roles_on_object: true\n",
        "          - role: owner\n            on_resource: folder\n            linked_by_relation: parent\n            no_direct_roles_on_object: true\n" +
          "          - role: reader\n            on_resource: folder\n            linked_by_relation: parent\n",
      );
    assert.notEqual(edited, exported);
    const plan = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, { policy: edited });
    assert.equal(plan.status, 200, plan.body);
    assert.deepEqual(plan.json.changes, [
      { op: "update", object: "resource_role", key: "document:editor", fields: ["derived_from"] },
      { op: "update", object: "role", key: "admin", fields: ["permissions"] },
    ]);
    const engineBefore = await engineOf(t, t.acme.envs.development);
    const applied = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
      policy: edited,
      revision: plan.json.revision,
    });
    assert.equal(applied.status, 200, applied.body);
    assert.equal(applied.json.revision, plan.json.revision + 1);
    assert.equal((await t.call(t.acme.adminKey, "GET", base(t, "development"))).json.policy, edited);

    const engine = await engineOf(t, t.acme.envs.development);
    const facts: Change[] = [
      { kind: "user", op: "upsert", data: { key: "u1", attributes: {} } },
      { kind: "tenant", op: "upsert", data: { key: "t1", attributes: {} } },
      { kind: "role_assignment", op: "upsert", data: { user: "u1", role: "admin", tenant: "t1" } },
      {
        kind: "resource_instance",
        op: "upsert",
        data: { type: "folder", key: "f1", tenant: "t1", attributes: {} },
      },
      {
        kind: "resource_instance",
        op: "upsert",
        data: { type: "document", key: "d1", tenant: "t1", attributes: {} },
      },
      {
        kind: "relationship_tuple",
        op: "upsert",
        data: { subject: "folder:f1", relation: "parent", object: "document:d1", tenant: "t1" },
      },
      {
        kind: "role_assignment",
        op: "upsert",
        data: { user: "u2", role: "reader", tenant: "t1", resource_instance: "folder:f1" },
      },
      { kind: "user", op: "upsert", data: { key: "u2", attributes: {} } },
    ] as Change[];
    for (const c of facts) {
      engine.apply(c);
      engineBefore.apply(c);
    }
    const del = { user: { key: "u1" }, action: "delete", resource: { type: "document", tenant: "t1" } };
    assert.equal(engineBefore.check(del).allow, true);
    assert.equal(engine.check(del).allow, false, "the removed permission is gone in the PDP");
    const write = {
      user: { key: "u2" },
      action: "write",
      resource: { type: "document", key: "d1", tenant: "t1" },
    };
    assert.equal(engineBefore.check(write).allow, false);
    assert.equal(engine.check(write).allow, true, "the added derivation reaches the PDP");
  });

  test("a stale plan is refused (409) and nothing is applied", async () => {
    const t = env();
    const plan = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, {
      policy: exported,
    });
    assert.ok(plan.json.changes.length > 0);
    // someone else writes in between
    const write = await t.call(
      t.acme.adminKey,
      "POST",
      `/v2/schema/${t.acme.projectId}/development/resources`,
      {
        key: "memo",
        name: "Memo",
        actions: { read: {} },
      },
    );
    assert.equal(write.status, 200, write.body);
    const current = await revisionOf(t, t.acme.envs.development);
    const stale = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
      policy: exported,
      revision: plan.json.revision,
    });
    assert.equal(stale.status, 409, stale.body);
    assert.equal(stale.json.error_code, "CONFLICT");
    assert.equal(await revisionOf(t, t.acme.envs.development), current);
    const now = await t.call(t.acme.adminKey, "GET", base(t, "development"));
    assert.ok(now.json.policy.includes("  memo:"), "the other write stays, the file was not applied");
  });

  test("dangerous deletions are named: a role with assignments, a resource with instances, an attribute a set uses", async () => {
    const t = env();
    const dev = `/v2/facts/${t.acme.projectId}/development`;
    const ok = (res: { status: number; body: string }) => assert.ok(res.status < 300, res.body);
    ok(await t.call(t.acme.adminKey, "POST", `${dev}/users`, { key: "zed" }));
    ok(await t.call(t.acme.adminKey, "POST", `${dev}/tenants`, { key: "t9", name: "T9" }));
    // eu_users' conditions read user.region
    ok(
      await t.call(
        t.acme.adminKey,
        "POST",
        `/v2/schema/${t.acme.projectId}/development/resources/__user/attributes`,
        {
          key: "region",
          type: "string",
        },
      ),
    );
    const assigned = await t.call(t.acme.adminKey, "POST", `${dev}/role_assignments`, {
      user: "zed",
      role: "viewer",
      tenant: "t9",
    });
    ok(assigned);
    const instance = await t.call(t.acme.adminKey, "POST", `${dev}/resource_instances`, {
      key: "m1",
      resource: "memo",
      tenant: "t9",
    });
    ok(instance);
    const current = (await t.call(t.acme.adminKey, "GET", base(t, "development"))).json.policy as string;
    const edited = current
      .replace(/\n {2}viewer:\n(?: {4}.*\n)+/, "\n")
      .replace(/\n {2}memo:\n(?: {4}.*\n)+/, "\n")
      .replace(/\nuser_attributes:\n(?: {2}.*\n)+/, "\n")
      .replace(/\n {6}- viewer\n/g, "\n");
    const plan = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, { policy: edited });
    assert.equal(plan.status, 200, plan.body);
    const dangerous = plan.json.dangerous.map((d: { object: string; key: string }) => `${d.object} ${d.key}`);
    assert.deepEqual(
      dangerous.sort(),
      ["resource memo", "role viewer", "user_attribute region"].sort(),
      plan.body,
    );
  });

  test("bad files: line and field of each problem, unknown references listed (422), nothing written", async () => {
    const t = env();
    const revision = await revisionOf(t, t.acme.envs.development);
    const url = `${base(t, "development")}/apply`;
    const broken = await t.call(t.acme.adminKey, "POST", url, { policy: "resources:\n  a: [1,\n", revision });
    assert.equal(broken.status, 422, broken.body);
    assert.match(broken.json.message, /line \d+, column \d+/);

    const wrong = await t.call(t.acme.adminKey, "POST", url, {
      policy:
        "resources:\n  doc:\n    actions:\n      read: {}\n    colour: red\n    roles:\n      r:\n        permissions: read\n",
      revision,
    });
    assert.equal(wrong.status, 422, wrong.body);
    assert.match(wrong.json.message, /line 5, column 13, resources\.doc\.colour: unknown field/);
    assert.match(
      wrong.json.message,
      /line 8, column 22, resources\.doc\.roles\.r\.permissions: must be a list/,
    );

    const refs = await t.call(t.acme.adminKey, "POST", url, {
      policy:
        "resources:\n  doc:\n    actions:\n      read: {}\n    roles:\n      r:\n        permissions: [read, write]\n" +
        "roles:\n  admin:\n    permissions: [doc:read, invoice:pay]\n    extends: [ghost]\n",
      revision,
    });
    assert.equal(refs.status, 422, refs.body);
    const fields = refs.json.additional_info.problems.map(
      (p: { field: string; line: number }) => `${p.line} ${p.field}`,
    );
    assert.deepEqual(fields, [
      "7 resources.doc.roles.r.permissions[1]",
      "10 roles.admin.permissions[1]",
      "11 roles.admin.extends[0]",
    ]);
    assert.deepEqual(refs.json.detail[0].loc, [
      "body",
      "policy",
      "resources",
      "doc",
      "roles",
      "r",
      "permissions",
      1,
    ]);
    assert.equal(await revisionOf(t, t.acme.envs.development), revision, "nothing was written");
  });

  test("a key of another organization reaches no environment's policy", async () => {
    const t = env();
    const res = await t.call(t.globex.adminKey, "GET", base(t, "production"));
    assert.ok(res.status === 403 || res.status === 404, res.body);
    const plan = await t.call(t.globex.adminKey, "POST", `${base(t, "production")}/plan`, { policy: "" });
    assert.ok(plan.status === 403 || plan.status === 404, plan.body);
  });
});
