// The example app: a real table of 10,000 documents on SQLite and on PostgreSQL, filtered with the WHERE clause
// (planToSql) and the Kysely expression (planToKysely) made from a plan, returns exactly the documents that a check
// on each allows: tenant roles, roles derived through folders 1 to 4 deep, and condition sets over booleans,
// numbers, strings and a list column, for users with and without a tenant scope.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { CompiledQuery, type Kysely } from "kysely";
import { createEngine, type EnvironmentData, type QueryUser } from "../../src/pdp/engine/index.ts";
import { planToKysely, planToSql, type FilterColumns } from "../../src/filters/index.ts";
import { DIALECTS, freshStore, type TestStore } from "../helpers/stores.ts";
import { Random, randomEnvironment } from "./random-environment.ts";

const DOCUMENTS = 10_000;
const TENANTS = ["t0", "t1", "t2", "t3"];
const LABELS = ["red", "green", "blue"];

interface Document {
  id: string;
  tenant_id: string;
  public: boolean | null;
  level: number | null;
  owner: string | null;
  title: string;
  labels: string[] | null;
}

function documents(random: Random): Document[] {
  return Array.from({ length: DOCUMENTS }, (_, i) => ({
    id: `doc-${String(i).padStart(5, "0")}`,
    tenant_id: random.pick(TENANTS),
    public: random.chance(0.2) ? null : random.chance(0.3),
    level: random.chance(0.1) ? null : random.int(6),
    owner: random.chance(0.5) ? null : random.pick(["ann", "bob", "cy", "dee"]),
    title: random.pick(["Alpha", "Beta", "alpine", "Gamma"]) + ` ${i}`,
    labels: random.chance(0.2) ? null : random.some(LABELS, 0.4),
  }));
}

/** Folders f<tenant>-<depth> chained by `parent` 4 deep in each tenant; document i sits in a folder of its tenant. */
function environment(docs: Document[], random: Random): EnvironmentData {
  const folders = TENANTS.flatMap((t) => [0, 1, 2, 3].map((depth) => ({ key: `f${t}-${depth}`, tenant: t })));
  return {
    resources: [
      {
        key: "folder",
        actions: ["read"],
        relations: { parent: "folder" },
        roles: {
          editor: {
            permissions: ["read"],
            granted_to: {
              users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
            },
          },
        },
      },
      {
        key: "document",
        actions: ["read", "write", "share"],
        relations: { parent: "folder" },
        roles: {
          editor: {
            permissions: ["read", "write"],
            granted_to: {
              users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
            },
          },
        },
      },
    ],
    roles: [
      { key: "viewer", permissions: ["document:read"] },
      { key: "admin", permissions: ["document:read", "document:write", "document:share"] },
    ],
    users: [
      { key: "ann", attributes: { age: 40, clearance: 2, team: "red" } },
      { key: "bob", attributes: { age: 15 } },
      { key: "cy", attributes: { age: 30, clearance: 4, team: "blue" } },
      { key: "dee" },
    ],
    tenants: TENANTS.map((key) => ({ key })),
    resource_instances: [
      ...folders.map((f) => ({ resource: "folder", key: f.key, tenant: f.tenant })),
      ...docs.map((d) => ({
        resource: "document",
        key: d.id,
        tenant: d.tenant_id,
        attributes: Object.fromEntries(
          Object.entries({
            public: d.public,
            level: d.level,
            owner: d.owner,
            title: d.title,
            labels: d.labels,
          })
            // A NULL column is an attribute the PDP does not hold.
            .filter(([, v]) => v !== null),
        ),
      })),
    ],
    relationship_tuples: [
      ...folders
        .filter((f) => !f.key.endsWith("-0"))
        .map((f) => ({
          subject: `folder:${f.key.replace(/-(\d)$/, (_, d: string) => `-${Number(d) - 1}`)}`,
          relation: "parent",
          object: `folder:${f.key}`,
          tenant: f.tenant,
        })),
      ...docs.map((d) => ({
        subject: `folder:f${d.tenant_id}-${random.int(4)}`,
        relation: "parent",
        object: `document:${d.id}`,
        tenant: d.tenant_id,
      })),
    ],
    role_assignments: [
      { user: "ann", role: "viewer", tenant: "t1" },
      { user: "ann", role: "editor", tenant: "t2", resource_instance: "folder:ft2-1" },
      { user: "bob", role: "admin", tenant: "t3" },
      { user: "bob", role: "editor", tenant: "t0", resource_instance: "folder:ft0-0" },
      { user: "dee", role: "editor", tenant: "t1", resource_instance: "document:doc-00007" },
    ],
    condition_sets: [
      { key: "adults", type: "userset", conditions: { "user.age": { "greater-than": 17 } } },
      { key: "everyone", type: "userset", conditions: {} },
      {
        key: "open",
        type: "resourceset",
        resource: "document",
        conditions: {
          anyOf: [
            { "resource.public": { equals: true } },
            {
              allOf: [
                { "resource.level": { "less-than-equals": { ref: "user.clearance" } } },
                { "resource.labels": { array_contains: { ref: "user.team" } } },
                { not: { "resource.title": { "starts-with": "Al" } } },
              ],
            },
          ],
        },
      },
      {
        // `not` over a NULL column holds (the attribute is missing); titles order by code unit, "alpine" > "B".
        key: "drafts",
        type: "resourceset",
        resource: "document",
        conditions: {
          allOf: [
            { not: { "resource.public": { equals: true } } },
            { "resource.title": { "less-than": "B" } },
          ],
        },
      },
      {
        key: "owned",
        type: "resourceset",
        resource: "document",
        conditions: {
          allOf: [
            { "resource.owner": { equals: { ref: "user.key" } } },
            { "resource.labels": { array_intersect: ["green", "blue"] } },
            { "resource.level": { "not-in": [0, 5] } },
          ],
        },
      },
    ],
    condition_set_rules: [
      { user_set: "adults", permission: "document:read", resource_set: "open" },
      { user_set: "adults", permission: "document:write", resource_set: "drafts" },
      { user_set: "everyone", permission: "document:share", resource_set: "owned" },
    ],
  };
}

const columns: FilterColumns = {
  key: "id",
  tenant: "tenant_id",
  public: "public",
  level: "level",
  owner: "owner",
  title: "title",
  labels: { column: "labels", array: true },
};

const USERS: QueryUser[] = [
  { key: "ann" },
  { key: "bob" },
  { key: "cy" },
  { key: "dee" },
  { key: "stranger", attributes: { age: 50, clearance: 9, team: "green" } },
];

for (const { dialect, skip } of DIALECTS) {
  describe(`filter plans on a real ${dialect} table of ${DOCUMENTS} documents`, { skip }, () => {
    let store: TestStore;
    // Kysely over a table the app owns, not in Gatehouse's schema.
    let db: Kysely<{ documents: Document }>;
    const random = new Random(40);
    const docs = documents(random);
    const engine = createEngine(environment(docs, random));

    before(async () => {
      store = await freshStore(dialect, { migrate: false });
      db = store.db as unknown as Kysely<{ documents: Document }>;
      const pg = dialect === "postgres";
      await db.executeQuery(
        CompiledQuery.raw(
          `create table documents (id text primary key, tenant_id text not null, public ${pg ? "boolean" : "integer"},
           level integer, owner text, title text not null, labels ${pg ? "text[]" : "text"})`,
        ),
      );
      for (let i = 0; i < docs.length; i += 500) {
        const rows = docs.slice(i, i + 500).map((d) => ({
          ...d,
          public: (pg || d.public === null ? d.public : Number(d.public)) as boolean | null,
          labels: (pg || d.labels === null ? d.labels : JSON.stringify(d.labels)) as string[] | null,
        }));
        await db.insertInto("documents").values(rows).execute();
      }
    });

    after(async () => {
      await store?.close();
    });

    test("the WHERE clause and the Kysely expression select exactly what checks allow", async () => {
      let compared = 0;
      let selected = 0;
      for (const user of USERS) {
        for (const action of ["read", "write", "share"]) {
          for (const tenant of [undefined, "t1", "t2"]) {
            const plan = engine.planResources({
              user,
              action,
              resource: { type: "document", ...(tenant === undefined ? {} : { tenant }) },
            });
            const expected = docs
              .filter(
                (d) =>
                  engine.check({
                    user,
                    action,
                    resource: { type: "document", key: d.id, ...(tenant ? { tenant } : {}) },
                  }).allow,
              )
              .map((d) => d.id);
            const where = planToSql(plan, { dialect, columns });
            const raw = await db.executeQuery<{ id: string }>(
              CompiledQuery.raw(`select id from documents where ${where.sql} order by id`, where.params),
            );
            const label = `${user.key} ${action} in ${tenant ?? "own tenants"}: ${JSON.stringify(plan).slice(0, 400)}`;
            assert.deepEqual(
              raw.rows.map((r) => r.id),
              expected,
              label,
            );
            const viaKysely = await db
              .selectFrom("documents")
              .select("id")
              .where(planToKysely(plan, { dialect, columns }))
              .orderBy("id")
              .execute();
            assert.deepEqual(
              viaKysely.map((r) => r.id),
              expected,
              label,
            );
            compared++;
            selected += expected.length;
          }
        }
      }
      assert.equal(compared, USERS.length * 9);
      // Guards against a fixture where every plan admits nothing or everything.
      assert.ok(selected > 5000 && selected < compared * DOCUMENTS * 0.6, `selected ${selected}`);
    });

    test("a large key set is one parameter", () => {
      const plan = engine.planResources({
        user: { key: "bob" },
        action: "write",
        resource: { type: "document" },
      });
      assert.ok(plan.key_count > 1000, `key_count ${plan.key_count}`);
      const where = planToSql(plan, { dialect, columns });
      assert.ok(where.params.length < 5, where.sql);
    });
  });
}

// Random policies (test/pdp/random-environment.ts: tenant roles, derivations, condition sets with every operator)
// through SQL: each environment's instances in a table, each plan's WHERE against the checks.
for (const { dialect, skip } of DIALECTS) {
  test(`plans of random policies select on ${dialect} what checks allow`, { skip }, async () => {
    const store = await freshStore(dialect, { migrate: false });
    const pg = dialect === "postgres";
    const run = (text: string, params: unknown[] = []) =>
      store.db.executeQuery<{ key: string }>(CompiledQuery.raw(text, params));
    const randomColumns: FilterColumns = {
      key: "key",
      tenant: "tenant",
      public: "public",
      level: "level",
      owner: "owner",
      labels: { column: "labels", array: true },
    };
    let compared = 0;
    try {
      const random = new Random(4040);
      for (let env = 0; env < 12; env++) {
        const data = randomEnvironment(random);
        const engine = createEngine(data);
        await run("drop table if exists instances");
        await run(
          `create table instances (type text, key text, tenant text, public ${pg ? "boolean" : "integer"},
           level integer, owner text, labels ${pg ? "text[]" : "text"})`,
        );
        for (const i of data.resource_instances ?? []) {
          const a = i.attributes ?? {};
          const labels = a["labels"] === undefined ? null : pg ? a["labels"] : JSON.stringify(a["labels"]);
          const visible = a["public"] === undefined ? null : pg ? a["public"] : Number(a["public"]);
          await run(
            pg
              ? "insert into instances values ($1, $2, $3, $4, $5, $6, $7)"
              : "insert into instances values (?, ?, ?, ?, ?, ?, ?)",
            [i.resource, i.key, i.tenant, visible, a["level"] ?? null, a["owner"] ?? null, labels],
          );
        }
        for (const user of [...(data.users ?? []).map((u) => ({ key: u.key })), { key: "stranger" }]) {
          for (const resource of data.resources ?? []) {
            for (const action of resource.actions) {
              for (const tenant of [undefined, random.pick(["t1", "t2"])]) {
                const scoped = tenant === undefined ? {} : { tenant };
                const plan = engine.planResources({
                  user,
                  action,
                  resource: { type: resource.key, ...scoped },
                });
                const expected = (data.resource_instances ?? [])
                  .filter((i) => i.resource === resource.key)
                  .filter(
                    (i) =>
                      engine.check({ user, action, resource: { type: i.resource, key: i.key, ...scoped } })
                        .allow,
                  )
                  .map((i) => i.key)
                  .sort();
                const where = planToSql(plan, { dialect, columns: randomColumns, paramOffset: 1 });
                const typeParam = pg ? "$1" : "?";
                const rows = await run(
                  `select key from instances where type = ${typeParam} and ${where.sql}`,
                  [resource.key, ...where.params],
                );
                assert.deepEqual(
                  rows.rows.map((r) => r.key).sort(),
                  expected,
                  `environment ${env}: ${user.key} ${action} ${resource.key} ${tenant ?? ""}: ${JSON.stringify(plan)}`,
                );
                compared++;
              }
            }
          }
        }
      }
    } finally {
      await store.close();
    }
    assert.ok(compared > 500, `only ${compared} plans compared`);
  });
}
