import { before, test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { readChangesAfter } from "../helpers/changes.ts";
import { policyCommand } from "../../src/cli/policy.ts";
import { seedRichPolicy } from "../helpers/copy-policy.ts";

const revisionOf = async (t: TestEnv, envKey: string) =>
  Number(
    (
      await t.store.db
        .selectFrom("environments")
        .select("revision")
        .where("project_id", "=", t.acme.projectId)
        .where("key", "=", envKey)
        .executeTakeFirstOrThrow()
    ).revision,
  );

describeEachDialect("policy files with facts", (env) => {
  const base = (t: TestEnv, envKey: string) => `/v2/schema/${t.acme.projectId}/${envKey}/policy`;
  const facts = (envKey: string) => `/v2/facts/default/${envKey}`;
  let exported = "";

  const ok = async (t: TestEnv, method: "GET" | "POST", url: string, body?: unknown) => {
    const res = await t.call(t.acme.adminKey, method, url, body);
    assert.ok(res.status < 300, `${method} ${url}: ${res.body}`);
    return res;
  };

  before(async () => {
    const t = env();
    await seedRichPolicy(t.store.db, t.acme.envs.production);
    const F = facts("production");
    await ok(t, "POST", `${F}/tenants`, { key: "t1", name: "Tenant One", attributes: { plan: "pro" } });
    await ok(t, "POST", `${F}/users`, {
      key: "ann",
      email: "ann@example.com",
      first_name: "Ann",
      attributes: { region: "eu", tags: ["b", "a"] },
    });
    await ok(t, "POST", `${F}/users`, { key: "bob" });
    await ok(t, "POST", `${F}/role_assignments`, { user: "ann", role: "admin", tenant: "t1" });
    await ok(t, "POST", `${F}/role_assignments`, {
      user: "bob",
      role: "reader",
      tenant: "t1",
      resource_instance: "folder:f1",
    });
    await ok(t, "POST", `${F}/relationship_tuples`, {
      subject: "folder:f1",
      relation: "parent",
      object: "document:d1",
      tenant: "t1",
    });
  });

  test("export writes facts only when asked, sorted, the same twice", async () => {
    const t = env();
    const without = await ok(t, "GET", base(t, "production"));
    assert.doesNotMatch(without.json.policy, /facts:/);
    exported = (await ok(t, "GET", `${base(t, "production")}?with_facts=true`)).json.policy;
    const section = exported.slice(exported.indexOf("\nfacts:"));
    for (const part of [
      "  tenants:",
      "    - key: t1\n      name: Tenant One\n      attributes:\n        plan: pro",
      "  users:",
      "    - key: ann\n      email: ann@example.com\n      first_name: Ann",
      "    - key: bob",
      "  role_assignments:",
      "    - user: ann\n      role: admin\n      tenant: t1",
      "    - user: bob\n      role: reader\n      tenant: t1\n      resource_instance: folder:f1",
      "  relationship_tuples:\n    - subject: folder:f1\n      relation: parent\n      object: document:d1\n      tenant: t1",
    ]) {
      assert.ok(section.includes(part), `${part}\n---\n${section}`);
    }
    assert.ok(section.indexOf("key: ann") < section.indexOf("key: bob"));
    const again = await ok(t, "GET", `${base(t, "production")}?with_facts=true`);
    assert.equal(again.json.policy, exported);
  });

  test("plan lists the facts to create and writes nothing; apply to an empty environment → export gives the same bytes", async () => {
    const t = env();
    await ok(t, "POST", `/v2/projects/${t.acme.projectId}/envs`, { key: "seeded", name: "Seeded" });
    const revision = await revisionOf(t, "seeded");
    const plan = await ok(t, "POST", `${base(t, "seeded")}/plan`, { policy: exported });
    const factChanges = plan.json.changes.filter((c: { object: string }) =>
      ["tenant", "user", "role_assignment", "relationship_tuple"].includes(c.object),
    );
    for (const want of [
      "create tenant t1",
      "create user ann",
      "create user bob",
      "create role_assignment ann:admin:t1",
      "create role_assignment bob:reader:t1:folder:f1",
      "create relationship_tuple folder:f1 parent document:d1",
    ]) {
      assert.ok(
        factChanges.some(
          (c: { op: string; object: string; key: string }) => `${c.op} ${c.object} ${c.key}` === want,
        ),
        `${want} in ${JSON.stringify(factChanges)}`,
      );
    }
    assert.ok(
      plan.json.changes.some((c: { object: string }) => c.object === "resource"),
      "and the schema",
    );
    assert.equal(await revisionOf(t, "seeded"), revision, "the plan wrote nothing");
    assert.equal((await t.call(t.acme.adminKey, "GET", `${facts("seeded")}/users/ann`)).status, 404);

    const applied = await ok(t, "POST", `${base(t, "seeded")}/apply`, { policy: exported, revision });
    assert.equal(applied.json.revision, revision + 1, "one revision");
    const envId = (await ok(t, "GET", `/v2/projects/${t.acme.projectId}/envs/seeded`)).json.id as string;
    const fed = (await readChangesAfter(t.store.db, envId, revision, revision + 1)).map(
      (c) => `${c.kind} ${c.op} ${JSON.stringify(c.data)}`,
    );
    assert.ok(
      fed.some((c) => c.startsWith('resource upsert {"key":"document"')),
      "the schema's records",
    );
    assert.ok(
      fed.some((c) => c.startsWith('user upsert {"key":"ann"')),
      "and the facts', for the PDPs",
    );
    assert.ok(fed.some((c) => c.startsWith("role_assignment upsert") && c.includes('"role":"admin"')));
    const user = await ok(t, "GET", `${facts("seeded")}/users/ann`);
    assert.deepEqual(user.json.attributes, { region: "eu", tags: ["b", "a"] });
    const back = await ok(t, "GET", `${base(t, "seeded")}?with_facts=true`);
    assert.equal(back.json.policy, exported);
    const replan = await ok(t, "POST", `${base(t, "seeded")}/plan`, { policy: exported });
    assert.deepEqual(replan.json.changes, [], "nothing left to do");

    // Additive: a fact the file leaves out stays; one that differs is updated.
    await ok(t, "POST", `${facts("seeded")}/users`, { key: "carol" });
    const changed = exported.replace("name: Tenant One", "name: Tenant Uno");
    const update = await ok(t, "POST", `${base(t, "seeded")}/plan`, { policy: changed });
    assert.deepEqual(update.json.changes, [{ op: "update", object: "tenant", key: "t1" }]);
    await ok(t, "POST", `${base(t, "seeded")}/apply`, { policy: changed, revision: update.json.revision });
    assert.equal((await ok(t, "GET", `${facts("seeded")}/tenants/t1`)).json.name, "Tenant Uno");
    assert.equal((await t.call(t.acme.adminKey, "GET", `${facts("seeded")}/users/carol`)).status, 200);
  });

  test("a fact naming a role or tenant that neither the environment nor the file has: 422 at its path, nothing written", async () => {
    const t = env();
    const revision = await revisionOf(t, "development");
    for (const [assignment, line] of [
      ["{ user: zed, role: ghost, tenant: t9 }", 5],
      ["{ user: zed, role: admin, tenant: nowhere }", 5],
    ] as const) {
      const policy =
        "roles:\n  admin: {}\nfacts:\n  tenants: [{ key: t9 }]\n  users: [{ key: zed }]\n" +
        `  role_assignments:\n    - { user: zed, role: admin, tenant: t9 }\n    - ${assignment}\n`;
      const res = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
        policy,
        revision,
      });
      assert.equal(res.status, 422, res.body);
      const [problem] = res.json.additional_info.problems;
      assert.equal(problem.field, "facts.role_assignments[1]");
      assert.equal(problem.line, line + 3);
      assert.deepEqual(res.json.detail[0].loc, ["body", "policy", "facts", "role_assignments", 1]);
      const plan = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, { policy });
      assert.equal(plan.status, 422, plan.body);
    }
    assert.equal(await revisionOf(t, "development"), revision, "nothing was written");
    assert.equal((await t.call(t.acme.adminKey, "GET", `${facts("development")}/users/zed`)).status, 404);
    assert.equal((await t.call(t.acme.adminKey, "GET", `${facts("development")}/tenants/t9`)).status, 404);
    const tuple = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/apply`, {
      policy:
        "resources:\n  doc: {}\nfacts:\n  tenants: [{ key: t9 }]\n  relationship_tuples:\n" +
        "    - { subject: doc:a, relation: ghost, object: doc:b, tenant: t9 }\n",
      revision,
    });
    assert.equal(tuple.status, 422, tuple.body);
    assert.equal(tuple.json.additional_info.problems[0].field, "facts.relationship_tuples[0]");
    assert.equal(tuple.json.additional_info.problems[0].line, 6);
    const bad = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, {
      policy: "facts:\n  users: [{ key: zed, colour: red }]\n",
    });
    assert.equal(bad.status, 422, bad.body);
    assert.match(bad.json.message, /line 2, .*facts\.users\[0\]\.colour: unknown field/);
    const badKey = await t.call(t.acme.adminKey, "POST", `${base(t, "development")}/plan`, {
      policy: "facts:\n  tenants: [{ key: 'no spaces' }]\n",
    });
    assert.equal(badKey.status, 422, badKey.body);
    assert.match(badKey.json.message, /facts\.tenants\[0\]\.key: must match/);
  });

  test("the CLI exports the facts with --with-facts only", async () => {
    const t = env();
    await t.app.listen({ host: "127.0.0.1", port: 0 });
    const address = t.app.server.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    const cli = async (...argv: string[]) => {
      let out = "";
      const code = await policyCommand(argv, {
        env: { GATEHOUSE_URL: url, GATEHOUSE_API_KEY: t.acme.adminKey },
        out: (text) => (out += text),
        err: () => {},
      });
      assert.equal(code, 0);
      return out;
    };
    const target = `${t.acme.projectId}/production`;
    assert.equal(await cli("export", "--env", target, "--with-facts"), exported);
    assert.doesNotMatch(await cli("export", "--env", target), /facts:/);
  });
});
