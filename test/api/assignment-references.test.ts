import { test, before } from "node:test";
import assert from "node:assert/strict";
import pg from "pg";
import { sql } from "kysely";
import { describeEachDialect } from "../helpers/app.ts";
import { factsUrl, postTenants, seedStandard } from "../helpers/facts.ts";
import { schemaUrl } from "../helpers/schema-api.ts";
import { PG_URL } from "../helpers/stores.ts";

/**
 * A role assignment never names a missing user, role, tenant, instance or environment, and goes when any of them
 * goes: foreign keys on SQLite, statement-level triggers on PostgreSQL (migration 0022), including a delete racing
 * an insert that names the deleted row.
 */
describeEachDialect("role assignment references", (env) => {
  let F = "";
  before(async () => {
    await seedStandard(env());
    F = factsUrl(env().acme);
    await postTenants(env(), F, ["t1", "t2"]);
  });

  const ok = async (method: "POST" | "PUT" | "DELETE", url: string, body?: unknown) => {
    const res = await env().call(env().acme.adminKey, method, url, body);
    assert.ok(res.status >= 200 && res.status < 300, `${method} ${url}: ${res.status} ${res.body}`);
    return res;
  };
  const idOf = async (
    table: "users" | "tenants" | "roles",
    key: string,
    envId = env().acme.envs.production,
  ) =>
    (
      await env()
        .store.db.selectFrom(table)
        .select("id")
        .where("environment_id", "=", envId)
        .where("key", "=", key)
        .executeTakeFirstOrThrow()
    ).id;
  const assignmentsWhere = async (column: string, id: string) =>
    Number(
      (
        await sql<{
          n: number;
        }>`select count(*) as n from role_assignments where ${sql.ref(column)} = ${id}`.execute(
          env().store.db,
        )
      ).rows[0]?.n,
    );
  const assign = (items: unknown[]) =>
    ok("POST", `${F}/role_assignments/bulk?missing_user_policy=create`, items);

  test("an insert or update naming a missing row is refused and writes nothing", async () => {
    const e = env();
    await assign([{ user: "ref-u1", role: "viewer", tenant: "t1" }]);
    const [userId, roleId, tenantId] = [
      await idOf("users", "ref-u1"),
      await idOf("roles", "viewer"),
      await idOf("tenants", "t1"),
    ];
    const row = (overrides: Record<string, string>) => ({
      id: `ref-row-${Object.values(overrides).join("-")}`,
      organization_id: e.acme.id,
      project_id: e.acme.projectId,
      environment_id: e.acme.envs.production,
      user_id: userId,
      role_id: roleId,
      tenant_id: tenantId,
      created_at: new Date().toISOString(),
      ...overrides,
    });
    const refused = e.dialect === "postgres" ? { code: "23503" } : { code: "SQLITE_CONSTRAINT_FOREIGNKEY" };
    const before = await assignmentsWhere("environment_id", e.acme.envs.production);
    const missingRefs: Record<string, string>[] = [
      { user_id: "no-such-user" },
      { role_id: "no-such-role" },
      { tenant_id: "no-such-tenant" },
      { environment_id: "no-such-environment" },
      { resource_instance_id: "no-such-instance" },
    ];
    for (const missing of missingRefs) {
      // among valid rows: one bad row refuses the statement
      const rows = [row({ role_id: await idOf("roles", "admin") }), row(missing)];
      await assert.rejects(e.store.db.insertInto("role_assignments").values(rows).execute(), refused);
    }
    assert.equal(await assignmentsWhere("environment_id", e.acme.envs.production), before);
    await assert.rejects(
      e.store.db
        .updateTable("role_assignments")
        .set({ user_id: "no-such-user" })
        .where("user_id", "=", userId)
        .execute(),
      refused,
    );
    assert.equal(await assignmentsWhere("user_id", userId), 1);
    // A referenced row's id does not change under its assignments.
    await assert.rejects(
      e.store.db.updateTable("users").set({ id: "renamed" }).where("id", "=", userId).execute(),
      refused,
    );
  });

  test("deleting a user, role, tenant, instance or environment deletes its assignments, and only those", async () => {
    const e = env();
    await assign([
      { user: "cas-u1", role: "viewer", tenant: "t1" },
      { user: "cas-u1", role: "admin", tenant: "t2" },
      { user: "cas-u2", role: "viewer", tenant: "t1" },
      { user: "cas-u2", role: "auditor", tenant: "t2" },
      { user: "cas-u3", role: "editor", resource_instance: "document:cas-d1", tenant: "t2" },
      { user: "cas-u3", role: "viewer", tenant: "t1" },
    ]);
    const u1 = await idOf("users", "cas-u1");
    const u2 = await idOf("users", "cas-u2");
    const u3 = await idOf("users", "cas-u3");
    assert.equal(await assignmentsWhere("user_id", u1), 2);
    await ok("DELETE", `${F}/users/cas-u1`);
    assert.equal(await assignmentsWhere("user_id", u1), 0);
    assert.equal(await assignmentsWhere("user_id", u2), 2, "another user's assignments stay");

    const auditor = await idOf("roles", "auditor");
    assert.equal(await assignmentsWhere("role_id", auditor), 1);
    await ok("DELETE", `${schemaUrl(e.acme)}/roles/auditor`);
    assert.equal(await assignmentsWhere("role_id", auditor), 0);
    assert.equal(await assignmentsWhere("user_id", u2), 1);

    const instance = await e.store.db
      .selectFrom("resource_instances")
      .select("id")
      .where("key", "=", "cas-d1")
      .executeTakeFirstOrThrow();
    assert.equal(await assignmentsWhere("resource_instance_id", instance.id), 1);
    await ok("DELETE", `${F}/resource_instances/document:cas-d1`);
    assert.equal(await assignmentsWhere("resource_instance_id", instance.id), 0);
    assert.equal(await assignmentsWhere("user_id", u3), 1);

    await postTenants(e, F, ["cas-t3"]);
    await assign([{ user: "cas-u2", role: "admin", tenant: "cas-t3" }]);
    const t3 = await idOf("tenants", "cas-t3");
    await ok("DELETE", `${F}/tenants/cas-t3`);
    assert.equal(await assignmentsWhere("tenant_id", t3), 0);
    assert.equal(await assignmentsWhere("user_id", u2), 1);

    const dev = e.acme.envs.development;
    await ok("POST", `${factsUrl(e.acme, "development")}/tenants`, { key: "dev-t", name: "dev-t" });
    await ok("POST", `${factsUrl(e.acme, "development")}/role_assignments/bulk?missing_user_policy=create`, [
      { user: "dev-u", role: "viewer", tenant: "dev-t" },
    ]);
    assert.equal(await assignmentsWhere("environment_id", dev), 1);
    await ok("DELETE", `/v2/projects/${e.acme.projectId}/envs/${dev}`);
    assert.equal(await assignmentsWhere("environment_id", dev), 0);
    assert.equal(await assignmentsWhere("user_id", u2), 1, "another environment's assignments stay");
  });

  test(
    "a delete racing an insert that names the deleted user: the insert fails or the assignment goes",
    { timeout: 60_000 },
    async (t) => {
      const e = env();
      if (e.dialect !== "postgres") {
        t.skip("SQLite runs one write transaction at a time");
        return;
      }
      const schema = e.store.location.pgSchema ?? "";
      const connect = async () => {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`set search_path = "${schema}"`);
        return client;
      };
      const [importer, deleter, watcher] = [await connect(), await connect(), await connect()];
      try {
        const roleId = await idOf("roles", "admin");
        const tenantId = await idOf("tenants", "t1");
        const insert = (userId: string, id: string) =>
          importer.query(
            `insert into role_assignments (id, organization_id, project_id, environment_id, user_id, role_id, tenant_id, created_at)
           values ($1, $2, $3, $4, $5, $6, $7, now()::text)`,
            [id, e.acme.id, e.acme.projectId, e.acme.envs.production, userId, roleId, tenantId],
          );
        // Waits until `client`'s backend waits on a lock: the race's second statement is inside it.
        const blocked = async (client: pg.Client) => {
          const pid = (client as unknown as { processID: number }).processID;
          for (;;) {
            const { rows } = await watcher.query(
              `select wait_event_type from pg_stat_activity where pid = $1`,
              [pid],
            );
            if (rows[0]?.wait_event_type === "Lock") return;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        };

        // The insert comes first and holds its lock: the delete waits for it, then takes the assignment with it.
        await ok("PUT", `${F}/users/race-a`, {});
        const a = await idOf("users", "race-a");
        await importer.query("begin");
        await insert(a, "race-row-a");
        await deleter.query("begin");
        const deleting = deleter.query("delete from users where id = $1", [a]);
        await blocked(deleter);
        await importer.query("commit");
        await deleting;
        await deleter.query("commit");
        assert.equal(await assignmentsWhere("user_id", a), 0, "the committed assignment went with its user");
        assert.equal(await assignmentsWhere("id", "race-row-a"), 0);

        // The delete comes first: the insert's check waits for it and, once it commits, finds the user gone.
        await ok("PUT", `${F}/users/race-b`, {});
        const b = await idOf("users", "race-b");
        await deleter.query("begin");
        await deleter.query("delete from users where id = $1", [b]);
        await importer.query("begin");
        const inserting = insert(b, "race-row-b").then(
          () => "inserted",
          (error: { code?: string }) => error.code,
        );
        await blocked(importer);
        await deleter.query("commit");
        assert.equal(await inserting, "23503");
        await importer.query("rollback");
        assert.equal(await assignmentsWhere("user_id", b), 0);

        // The delete rolls back: the waiting insert takes the lock and goes on.
        await ok("PUT", `${F}/users/race-c`, {});
        const c = await idOf("users", "race-c");
        await deleter.query("begin");
        await deleter.query("delete from users where id = $1", [c]);
        await importer.query("begin");
        const kept = insert(c, "race-row-c");
        await blocked(importer);
        await deleter.query("rollback");
        await kept;
        await importer.query("commit");
        assert.equal(await assignmentsWhere("user_id", c), 1);
      } finally {
        await Promise.all([importer.end(), deleter.end(), watcher.end()]);
      }
    },
  );
});
