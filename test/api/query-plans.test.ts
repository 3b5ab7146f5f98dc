import { test, before } from "node:test";
import assert from "node:assert/strict";
import { CompiledQuery, type Compilable } from "kysely";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { factsUrl, seedStandard } from "../helpers/facts.ts";
import {
  assignmentsOfUsers,
  assignmentsOfUsersQuery,
  countUsersQuery,
  listUsersQuery,
} from "../../src/domain/facts/users.repo.ts";
import {
  countAssignmentsQuery,
  expiredAssignmentsCountQuery,
  listAssignmentsQuery,
} from "../../src/modules/role-assignments/role-assignments.repo.ts";
import { listTenantsQuery } from "../../src/modules/tenants/tenants.repo.ts";
import { listInstancesQuery } from "../../src/modules/resource-instances/resource-instances.repo.ts";
import { listTuplesQuery } from "../../src/modules/relationship-tuples/relationship-tuples.repo.ts";
import { findUser } from "../../src/domain/facts/facts.repo.ts";
import { anchorKeyQuery, anchorKeysQuery } from "../../src/domain/facts/list-pages.repo.ts";
import { newId } from "../../src/lib/ids.ts";
import { now } from "../../src/lib/time.ts";

/**
 * Every facts list, count and lookup must be served by an index that starts with environment_id, so no query
 * reads another environment's rows; joined rows are fetched by primary key. PostgreSQL is asked with sequential
 * scans off in the same session, so on tiny test tables it shows which index it would use. Hash and merge joins
 * and materialisation are off too: on a handful of rows the planner would otherwise read a whole primary-key index
 * once instead of looking rows up, which it does not do for a page of a large table. The query behind the roles
 * shown with a page of users is also checked on a large store with the settings untouched.
 */
const PLANNER_SETTINGS = ["enable_seqscan", "enable_hashjoin", "enable_mergejoin", "enable_material"];
interface Access {
  /** table alias (SQLite) or table name (PostgreSQL) */
  table: string;
  index: string | null;
  /** the index is searched with a condition, not read whole */
  bounded: boolean;
}

async function planOf(
  e: TestEnv,
  query: Compilable,
  plannerSettings = true,
): Promise<{ accesses: Access[]; text: string }> {
  const compiled = query.compile();
  if (e.dialect === "sqlite") {
    const result = await e.store.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
    );
    const accesses: Access[] = [];
    for (const { detail } of result.rows) {
      const m =
        /^(SEARCH|SCAN) (\S+)(?: EXISTS)?(?: USING (?:COVERING )?INDEX (\S+)(?: \((.*)\))?| USING INTEGER PRIMARY KEY)?/.exec(
          detail,
        );
      if (!m || m[2] === "CONSTANT") continue;
      accesses.push({ table: m[2] as string, index: m[3] ?? null, bounded: m[1] === "SEARCH" });
    }
    return { accesses, text: result.rows.map((r) => r.detail).join("\n") };
  }
  return e.store.db.connection().execute(async (conn) => {
    const settings = plannerSettings ? PLANNER_SETTINGS : [];
    for (const setting of settings) await conn.executeQuery(CompiledQuery.raw(`set ${setting} = off`));
    const result = await conn.executeQuery<{ "QUERY PLAN": unknown }>(
      CompiledQuery.raw(`explain (format json) ${compiled.sql}`, [...compiled.parameters]),
    );
    for (const setting of settings) await conn.executeQuery(CompiledQuery.raw(`reset ${setting}`));
    const plan = result.rows[0]?.["QUERY PLAN"];
    const accesses: Access[] = [];
    type Node = Record<string, unknown> & { Plans?: Node[] };
    const walk = (node: Node, parentRelation?: string) => {
      const type = node["Node Type"] as string;
      const relation = (node["Relation Name"] as string | undefined) ?? parentRelation;
      if (type === "Seq Scan") accesses.push({ table: relation ?? "?", index: null, bounded: false });
      if (type === "Index Scan" || type === "Index Only Scan" || type === "Bitmap Index Scan") {
        const table =
          type === "Bitmap Index Scan" ? (parentRelation ?? "?") : ((node["Relation Name"] as string) ?? "?");
        accesses.push({
          table,
          index: node["Index Name"] as string,
          bounded: node["Index Cond"] !== undefined,
        });
      }
      for (const child of node.Plans ?? []) walk(child, type === "Bitmap Heap Scan" ? relation : undefined);
    };
    walk((plan as { Plan: Node }[])[0]?.Plan as Node);
    return { accesses, text: JSON.stringify(plan) };
  });
}

async function firstColumn(e: TestEnv, index: string): Promise<string | undefined> {
  if (e.dialect === "sqlite") {
    const result = await e.store.db.executeQuery<{ seqno: number; name: string }>(
      CompiledQuery.raw(`pragma index_info('${index.replace(/'/g, "")}')`),
    );
    return result.rows.find((r) => r.seqno === 0)?.name;
  }
  const result = await e.store.db.executeQuery<{ attname: string }>(
    CompiledQuery.raw(
      "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0] " +
        "where i.indexrelid = to_regclass($1)",
      [index],
    ),
  );
  return result.rows[0]?.attname;
}

/**
 * Nothing in the plan reads a whole table or a whole index; every index it searches starts with environment_id
 * or is a primary key (a joined row fetched by id); and `table` (its alias on SQLite) is searched through an index
 * that starts with environment_id, unless the plan reaches it by primary key from rows that were.
 */
async function assertEnvironmentIndexed(
  e: TestEnv,
  query: Compilable,
  table: string,
  plannerSettings = true,
): Promise<void> {
  const { accesses, text } = await planOf(e, query, plannerSettings);
  let environmentSearches = 0;
  for (const access of accesses) {
    assert.ok(access.index !== null && access.bounded, `unbounded read of ${access.table}:\n${text}`);
    const column = await firstColumn(e, access.index as string);
    if (column === "environment_id") environmentSearches += 1;
    else assert.equal(column, "id", `${access.table} searched through ${access.index}:\n${text}`);
  }
  assert.ok(environmentSearches > 0, `no search by environment:\n${text}`);
  assert.ok(
    accesses.some((a) => a.table === table),
    `${table} is not in the plan:\n${text}`,
  );
}

describeEachDialect("facts: query plans", (env) => {
  let envId = "";
  let ids: { user: string; role: string; tenant: string; instance: string; resource: string } = {
    user: "",
    role: "",
    tenant: "",
    instance: "",
    resource: "",
  };
  before(async () => {
    const e = env();
    const seeded = await seedStandard(e);
    envId = e.acme.envs.production;
    for (const org of [e.acme, e.globex]) {
      const F = factsUrl(org);
      for (let i = 0; i < 5; i++) {
        const res = await e.call(org.adminKey, "POST", `${F}/users`, {
          key: `user-${i}`,
          role_assignments: [
            { role: "admin", tenant: "default" },
            { role: "editor", resource_instance: `document:doc-${i}`, tenant: "default" },
          ],
        });
        assert.equal(res.status, 201, String(res.body));
      }
      await e.call(org.adminKey, "POST", `${F}/relationship_tuples`, {
        subject: "folder:root",
        relation: "parent",
        object: "document:doc-1",
        tenant: "default",
      });
    }
    const F = factsUrl(e.acme);
    const user = (await e.call(e.acme.adminKey, "GET", `${F}/users/user-1`)).json;
    const instance = (await e.call(e.acme.adminKey, "GET", `${F}/resource_instances/document%3Adoc-1`)).json;
    ids = {
      user: user.id,
      role: seeded["acmeProd"]?.roles["admin"] as string,
      tenant: instance.tenant_id,
      instance: instance.id,
      resource: instance.resource_id,
    };
    if (e.dialect === "postgres") await e.store.db.executeQuery(CompiledQuery.raw("analyze"));
  });

  test("users: list and count, unfiltered and with search, role and tenant filters", async () => {
    const e = env();
    const db = e.store.db;
    const filters = [
      {},
      { search: "user" },
      { role: "admin" },
      { role: "" },
      { role: "editor", includeInstanceRoles: true },
      { tenantId: ids.tenant, role: "admin" },
    ];
    for (const f of filters) {
      await assertEnvironmentIndexed(e, listUsersQuery(db, envId, f, 0, 30), "users");
      await assertEnvironmentIndexed(e, countUsersQuery(db, envId, f), "users");
    }
    // The role filter's subquery reads role_assignments by environment too.
    const ra = e.dialect === "sqlite" ? "ra" : "role_assignments";
    await assertEnvironmentIndexed(e, listUsersQuery(db, envId, { role: "admin" }, 0, 30), ra);
    await assertEnvironmentIndexed(e, listUsersQuery(db, envId, { tenantId: ids.tenant }, 0, 30), ra);
  });

  test("users: the roles shown with a page of users, and a lookup by key", async () => {
    const e = env();
    const db = e.store.db;
    const ra = e.dialect === "sqlite" ? "ra" : "role_assignments";
    // The very query assignmentsOfUsers runs, for one user and for a page of them; its joins fetch by id.
    const page = (
      await db.selectFrom("users").select("id").where("environment_id", "=", envId).execute()
    ).map((u) => u.id);
    assert.ok(page.length >= 5);
    for (const userIds of [[ids.user], page]) {
      await assertEnvironmentIndexed(e, assignmentsOfUsersQuery(db, envId, userIds), ra);
    }
    assert.equal((await assignmentsOfUsers(db, envId, [ids.user])).length, 2);
    const byKey = db
      .selectFrom("users")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("key", "=", "user-1");
    await assertEnvironmentIndexed(e, byKey, "users");
    assert.equal((await findUser(db, envId, "user-1"))?.id, ids.user);
  });

  test("role assignments: list and count, unfiltered and with each filter", async () => {
    const e = env();
    const db = e.store.db;
    const ra = e.dialect === "sqlite" ? "ra" : "role_assignments";
    const filters = [
      {},
      { userIds: [ids.user] },
      { roleIds: [ids.role] },
      { tenantIds: [ids.tenant] },
      { instanceId: ids.instance },
      { resourceId: ids.resource },
      { userIds: [ids.user], tenantIds: [ids.tenant] },
    ];
    for (const f of filters) {
      await assertEnvironmentIndexed(e, listAssignmentsQuery(db, envId, f, 0, 30), ra);
      await assertEnvironmentIndexed(e, countAssignmentsQuery(db, envId, f), ra);
    }
  });

  test("tenants, resource instances and relationship tuples: lists", async () => {
    const e = env();
    const db = e.store.db;
    const sqlite = e.dialect === "sqlite";
    await assertEnvironmentIndexed(e, listTenantsQuery(db, envId, undefined, 0, 30), "tenants");
    await assertEnvironmentIndexed(e, listTenantsQuery(db, envId, "def", 0, 30), "tenants");
    const ri = sqlite ? "ri" : "resource_instances";
    await assertEnvironmentIndexed(e, listInstancesQuery(db, envId, {}, 0, 30), ri);
    await assertEnvironmentIndexed(e, listInstancesQuery(db, envId, { tenantId: ids.tenant }, 0, 30), ri);
    await assertEnvironmentIndexed(e, listInstancesQuery(db, envId, { resourceId: ids.resource }, 0, 30), ri);
    const rt = sqlite ? "rt" : "relationship_tuples";
    await assertEnvironmentIndexed(e, listTuplesQuery(db, envId, {}, 0, 30), rt);
    await assertEnvironmentIndexed(e, listTuplesQuery(db, envId, { tenantId: ids.tenant }, 0, 30), rt);
    await assertEnvironmentIndexed(e, listTuplesQuery(db, envId, { objectId: ids.instance }, 0, 30), rt);
  });

  test("deep pages and counters: the anchor walk, a seek past an anchor, the counter and the ended assignments", async () => {
    const e = env();
    const db = e.store.db;
    const sqlite = e.dialect === "sqlite";
    for (const list of [
      "users",
      "tenants",
      "resource_instances",
      "relationship_tuples",
      "role_assignments",
    ] as const) {
      const first = await db
        .selectFrom(list)
        .select(["created_at", "id"])
        .where("environment_id", "=", envId)
        .orderBy("created_at")
        .orderBy("id")
        .executeTakeFirstOrThrow();
      // The walk reads only the (environment_id, created_at, id) index, from the environment's start or as a range
      // after an anchor (a seek, not a filter).
      for (const after of [undefined, first]) {
        const { accesses, text } = await planOf(e, anchorKeyQuery(db, list, envId, after));
        assert.deepEqual(
          accesses.map((a) => [a.table, a.index, a.bounded]),
          [[sqlite ? "a" : list, `${list}_env_created_idx`, true]],
          text,
        );
        if (after)
          assert.match(text, sqlite ? /\(created_at,id\)>\(\?,\?\)/ : /ROW\(created_at, id\) > ROW/, text);
      }
      if (sqlite) continue;
      // PostgreSQL walks a deep page's anchors in one statement: a range of the same index, and with no statistics
      // (these tables were never analyzed) at most one sort, where an anchor a statement was a sort each.
      const walk = await planOf(e, anchorKeysQuery(db, list, envId, first, 99));
      assert.deepEqual(
        walk.accesses.map((a) => [a.table, a.index, a.bounded]),
        [[list, `${list}_env_created_idx`, true]],
        walk.text,
      );
      const untouched = await planOf(e, anchorKeysQuery(db, list, envId, undefined, 99), false);
      assert.ok((untouched.text.match(/Sort {2}\(cost/g) ?? []).length <= 1, untouched.text);
    }
    const after = await db
      .selectFrom("users")
      .select(["created_at", "id"])
      .where("environment_id", "=", envId)
      .executeTakeFirstOrThrow();
    await assertEnvironmentIndexed(e, listUsersQuery(db, envId, {}, 5, 30, after), "users");
    await assertEnvironmentIndexed(e, listTenantsQuery(db, envId, undefined, 5, 30, after), "tenants");
    const ri = sqlite ? "ri" : "resource_instances";
    await assertEnvironmentIndexed(e, listInstancesQuery(db, envId, {}, 5, 30, after), ri);
    const rt = sqlite ? "rt" : "relationship_tuples";
    await assertEnvironmentIndexed(e, listTuplesQuery(db, envId, {}, 5, 30, after), rt);
    await assertEnvironmentIndexed(e, expiredAssignmentsCountQuery(db, envId, now()), "role_assignments");
    const counter = db.selectFrom("list_counts").selectAll().where("environment_id", "=", envId);
    await assertEnvironmentIndexed(e, counter, "list_counts");
  });
  // Last: it fills another environment and refreshes the statistics.
  test("users: the roles of a page of users on a large store, by the planner's own choice", async () => {
    const e = env();
    const db = e.store.db;
    // Another environment of the same project holds thousands of every joined row, so a whole-table read or a
    // hash of a table costs what it would in production; the planner then runs with its settings untouched.
    const other = e.acme.envs.development;
    const scope = { organization_id: e.acme.id, project_id: e.acme.projectId, environment_id: other };
    const at = now();
    const stamps = { created_at: at, updated_at: at };
    const document = await db
      .selectFrom("resources")
      .select("id")
      .where("environment_id", "=", other)
      .where("key", "=", "document")
      .executeTakeFirstOrThrow();
    const N = 3000;
    const ids = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: newId(), key: `${prefix}${i}` }));
    const tenants = ids("bulk-t", N);
    const roles = ids("bulk-r", N);
    const users = ids("bulk-u", 2 * N);
    const instances = ids("bulk-d", N);
    const insert = async (
      table: "tenants" | "roles" | "users" | "resource_instances" | "role_assignments",
      rows: object[],
    ) => {
      for (let i = 0; i < rows.length; i += 200)
        await db
          .insertInto(table)
          .values(rows.slice(i, i + 200) as never)
          .execute();
    };
    await insert(
      "tenants",
      tenants.map((t) => ({
        ...scope,
        ...t,
        name: t.key,
        description: null,
        attributes: null,
        ...stamps,
        last_action_at: at,
      })),
    );
    await insert(
      "roles",
      roles.map((r) => ({
        ...scope,
        ...r,
        resource_id: null,
        name: r.key,
        description: null,
        attributes: null,
        no_direct_roles_on_object: 0,
        ...stamps,
      })),
    );
    await insert(
      "users",
      users.map((u) => ({
        ...scope,
        ...u,
        email: null,
        first_name: null,
        last_name: null,
        attributes: null,
        ...stamps,
      })),
    );
    await insert(
      "resource_instances",
      instances.map((d, i) => ({
        ...scope,
        ...d,
        resource_id: document.id,
        tenant_id: tenants[i]?.id,
        attributes: null,
        ...stamps,
      })),
    );
    await insert(
      "role_assignments",
      users.flatMap((u, i) =>
        [0, 1].map((k) => ({
          ...scope,
          id: newId(),
          user_id: u.id,
          role_id: roles[(i + k) % N]?.id,
          tenant_id: tenants[i % N]?.id,
          resource_instance_id: k === 1 ? (instances[i % N]?.id ?? null) : null,
          created_at: at,
        })),
      ),
    );
    await db.executeQuery(CompiledQuery.raw("analyze"));
    const ra = e.dialect === "sqlite" ? "ra" : "role_assignments";
    const page = (
      await db.selectFrom("users").select("id").where("environment_id", "=", envId).execute()
    ).map((u) => u.id);
    await assertEnvironmentIndexed(e, assignmentsOfUsersQuery(db, envId, page), ra, false);
    assert.equal((await assignmentsOfUsers(db, envId, page)).length, 2 * page.length);
  });
});
