import { test, before } from "node:test";
import assert from "node:assert/strict";
import { sql } from "kysely";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { factsUrl, postTenants, seedStandard } from "../helpers/facts.ts";
import { COUNTED_LISTS } from "../../src/db/migrations/0013_list_counts.ts";
import { deleteOrganization, writeExport } from "../../src/domain/organization-transfer.ts";
import { importOrganization } from "../../src/domain/organization-import.ts";

/** For every environment: the counter row next to COUNT(*) of each counted table. */
async function countersAndCounts(e: TestEnv) {
  const envs = await e.store.db.selectFrom("environments").select("id").orderBy("id").execute();
  const counters = await e.store.db.selectFrom("list_counts").selectAll().orderBy("environment_id").execute();
  assert.deepEqual(
    counters.map((c) => c.environment_id),
    envs.map((x) => x.id),
    "one counter row per environment",
  );
  const counted: Record<string, Record<string, number>> = {};
  const actual: Record<string, Record<string, number>> = {};
  for (const c of counters) {
    counted[c.environment_id] = Object.fromEntries(COUNTED_LISTS.map((l) => [l, Number(c[l])]));
    actual[c.environment_id] = {};
  }
  for (const list of COUNTED_LISTS) {
    const { rows } = await sql<{ environment_id: string; n: number }>`select environment_id, count(*) as n
      from ${sql.table(list)} group by environment_id`.execute(e.store.db);
    for (const envId of Object.keys(actual)) {
      const row = rows.find((r) => r.environment_id === envId);
      (actual[envId] as Record<string, number>)[list] = Number(row?.n ?? 0);
    }
  }
  return { counted, actual };
}

async function assertExact(e: TestEnv, step: string) {
  const { counted, actual } = await countersAndCounts(e);
  assert.deepEqual(counted, actual, `after ${step}`);
}

describeEachDialect("list counts: kept exact by every kind of write", (env) => {
  let F = "";
  before(async () => {
    await seedStandard(env());
    F = factsUrl(env().acme);
    env().app.taskRunner.start();
  });

  const ok = async (method: "POST" | "PUT" | "DELETE", url: string, body?: unknown) => {
    const res = await env().call(env().acme.adminKey, method, url, body);
    assert.ok(res.status >= 200 && res.status < 300, `${method} ${url}: ${res.status} ${res.body}`);
    return res;
  };

  test("concurrent writers of one environment: the counters stay exact", async () => {
    const e = env();
    const writes = Array.from({ length: 24 }, (_, i) =>
      i % 2 === 0
        ? ok("POST", `${F}/users`, { key: `concurrent-${i}` })
        : ok("POST", `${F}/tenants`, { key: `concurrent-${i}`, name: `Concurrent ${i}` }),
    );
    await Promise.all(writes);
    await assertExact(e, "24 concurrent writes");
  });

  test("single and bulk writes, cascades, environment copy and delete, organization move: counter = COUNT(*) after each", async () => {
    const e = env();
    await assertExact(e, "seeding");
    await postTenants(e, F, ["t1", "t2", "t3"]);
    for (const key of ["u1", "u2", "u3"]) {
      await ok("POST", `${F}/users`, { key, role_assignments: [{ role: "viewer", tenant: "t2" }] });
    }
    await ok("PUT", `${F}/users/u4`, { email: "u4@example.com" });
    await ok("PUT", `${F}/users/u4`, { email: "u4b@example.com" });
    await assertExact(e, "single user and tenant writes");
    await ok("POST", `${F}/bulk/users`, {
      operations: [
        { key: "b1", role_assignments: [{ role: "admin", tenant: "t1" }] },
        { key: "b2" },
        { key: "b3", role_assignments: [{ role: "viewer", tenant: "t3" }] },
      ],
    });
    await ok("PUT", `${F}/bulk/users`, {
      operations: [{ key: "b2", email: "b2@example.com" }, { key: "b4" }],
    });
    await ok("POST", `${F}/role_assignments`, { user: "u1", role: "admin", tenant: "t1" });
    await ok("POST", `${F}/resource_instances`, { key: "r1", resource: "document", tenant: "t1" });
    await ok("POST", `${F}/relationship_tuples`, {
      subject: "folder:f1",
      relation: "parent",
      object: "document:d1",
      tenant: "t1",
    });
    await ok("POST", `${F}/relationship_tuples`, {
      subject: "folder:f2",
      relation: "parent",
      object: "document:d2",
      tenant: "t3",
    });
    await ok("POST", `${F}/role_assignments`, {
      user: "u2",
      role: "editor",
      resource_instance: "document:d1",
      tenant: "t1",
    });
    await assertExact(e, "bulk users, assignments, instances and tuples");
    await ok("DELETE", `${F}/role_assignments`, { user: "u1", role: "admin", tenant: "t1" });
    await ok("DELETE", `${F}/users/u2`);
    await assertExact(e, "deleting an assignment and a user (cascading to its assignments)");
    await ok("DELETE", `${F}/bulk/users`, { idents: ["b1", "b3"] });
    await ok("DELETE", `${F}/resource_instances/document:d2`);
    await ok("DELETE", `${F}/tenants/t1`);
    await assertExact(
      e,
      "bulk delete, instance delete, tenant delete (cascading to instances, tuples, assignments)",
    );

    const envs = `/v2/projects/default/envs`;
    const copy = await ok("POST", `${envs}/${e.acme.envs.production}/copy/async`, {
      target_env: { new: { key: "staging", name: "Staging" } },
      conflict_strategy: "fail",
    });
    const done = await e.call(
      e.acme.adminKey,
      "GET",
      `${envs}/${e.acme.envs.production}/copy/async/${copy.json.task_id}/result?wait=30`,
    );
    assert.equal(done.json.status, "success", done.body);
    await assertExact(e, "an environment copy");
    const staging = await e.store.db
      .selectFrom("list_counts")
      .innerJoin("environments", "environments.id", "list_counts.environment_id")
      .selectAll("list_counts")
      .where("environments.key", "=", "staging")
      .where("environments.organization_id", "=", e.acme.id)
      .executeTakeFirstOrThrow();
    // A copy takes the policy; the new environment has its default tenant and no users.
    assert.deepEqual([Number(staging.tenants), Number(staging.users)], [1, 0]);
    await ok("DELETE", `${envs}/staging`);
    await assertExact(e, "deleting the copied environment");

    const total = async (list: string) =>
      (await e.call(e.acme.adminKey, "GET", `${F}/${list}?include_total_count=true&per_page=1`)).json
        .total_count;
    const mine = (await countersAndCounts(e)).actual[e.acme.envs.production] as Record<string, number>;
    assert.equal(
      (await e.call(e.acme.adminKey, "GET", `${F}/users?per_page=1`)).json.total_count,
      mine["users"],
    );
    assert.equal(await total("tenants"), mine["tenants"]);
    assert.equal(await total("resource_instances"), mine["resource_instances"]);
    assert.equal(await total("relationship_tuples"), mine["relationship_tuples"]);
    assert.equal(await total("role_assignments"), mine["role_assignments"]);
    // An ended assignment the purge has not deleted yet is left out of the unfiltered total as out of the list.
    const one = await e.store.db
      .selectFrom("role_assignments")
      .select("id")
      .where("environment_id", "=", e.acme.envs.production)
      .executeTakeFirstOrThrow();
    const ended = new Date(Date.now() - 1000).toISOString().replace("Z", "+00:00");
    await e.store.db
      .updateTable("role_assignments")
      .set({ expires_at: ended })
      .where("id", "=", one.id)
      .execute();
    assert.equal(await total("role_assignments"), (mine["role_assignments"] as number) - 1);

    // An organization moved away (exported, deleted) and back (imported): its counters go and come back.
    const before = (await countersAndCounts(e)).counted[e.acme.envs.production];
    const lines: string[] = [];
    const acme = { id: e.acme.id, key: "acme", name: "acme inc" };
    await writeExport(e.store.db, acme, { from: "r1", to: "r1" }, async (line) => {
      lines.push(line);
    });
    await deleteOrganization(e.store.db, acme, { force: true });
    await assertExact(e, "deleting an organization");
    await importOrganization(
      e.store.db,
      e.box,
      (async function* () {
        yield* lines;
      })(),
      { region: "r1", maxValueBytes: 1024 * 1024 },
    );
    await assertExact(e, "importing an organization");
    assert.deepEqual((await countersAndCounts(e)).counted[e.acme.envs.production], before);
  });
});
