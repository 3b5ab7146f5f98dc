import { test } from "node:test";
import assert from "node:assert/strict";
import { Migrator, sql, type Kysely, type Migration } from "kysely";
import { migrateToLatest, openStore } from "../../src/db/store.ts";
import { migrations } from "../../src/db/migrations/index.ts";
import { DIALECTS, freshStore } from "../helpers/stores.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { newId } from "../../src/lib/ids.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

const tables = async (db: AnyDb, dialect: string): Promise<string[]> => {
  const { rows } =
    dialect === "sqlite"
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
      : await sql<{ name: string }>`select table_name as name from information_schema.tables
          where table_schema = current_schema()`.execute(db);
  return rows.map((r) => r.name).sort();
};
const recorded = async (db: AnyDb): Promise<string[]> =>
  (await sql<{ name: string }>`select name from gatehouse_migrations order by name`.execute(db)).rows.map(
    (r) => r.name,
  );
const createTable = (name: string): Migration => ({
  up: async (db: AnyDb) => db.schema.createTable(name).addColumn("id", "integer").execute(),
});

for (const { dialect, skip } of DIALECTS) {
  test(
    `migrations [${dialect}]: applied in name order, each whole or not at all; a rerun applies nothing`,
    { skip },
    async () => {
      const store = await freshStore(dialect, { migrate: false });
      try {
        const failing: Migration = {
          up: async (db: AnyDb) => {
            await db.schema.createTable("half_done").addColumn("id", "integer").execute();
            throw new Error("migration failed on purpose");
          },
        };
        // listed out of order: the runner sorts by name
        const list = { b_second: failing, a_first: createTable("first_table") };
        await assert.rejects(migrateToLatest(store, list), /failed on purpose/);
        assert.deepEqual(await recorded(store.db), ["a_first"]);
        const after = await tables(store.db, dialect);
        assert.ok(after.includes("first_table"));
        assert.ok(!after.includes("half_done"), "the failed migration's table was rolled back");

        const fixed = { ...list, b_second: createTable("second_table") };
        assert.deepEqual(await migrateToLatest(store, fixed), ["b_second"]);
        assert.deepEqual(await migrateToLatest(store, fixed), []);
        assert.deepEqual(await recorded(store.db), ["a_first", "b_second"]);
      } finally {
        await store.close();
      }
    },
  );

  test(
    `migrations [${dialect}]: a database migrated by a newer version is refused, not touched`,
    { skip },
    async () => {
      const store = await freshStore(dialect, { migrate: false });
      try {
        await migrateToLatest(store, {
          a_first: createTable("first_table"),
          c_newer: createTable("newer_table"),
        });
        await assert.rejects(
          migrateToLatest(store, {
            a_first: createTable("first_table"),
            b_other: createTable("other_table"),
          }),
          /does not know \(c_newer\)/,
        );
        assert.ok(!(await tables(store.db, dialect)).includes("other_table"));
      } finally {
        await store.close();
      }
    },
  );

  test(
    `migrations [${dialect}]: a database that Kysely's Migrator migrated carries on with nothing to apply`,
    { skip },
    async () => {
      const store = await freshStore(dialect, { migrate: false });
      try {
        // how earlier versions of Gatehouse migrated
        const migrator = new Migrator({
          db: store.db,
          provider: { getMigrations: async () => migrations },
          migrationTableName: "gatehouse_migrations",
          migrationLockTableName: "gatehouse_migrations_lock",
          ...(store.location.pgSchema && { migrationTableSchema: store.location.pgSchema }),
        });
        const result = await migrator.migrateToLatest();
        assert.equal(result.error, undefined);
        assert.deepEqual(await migrateToLatest(store), []);
        assert.deepEqual(await recorded(store.db), Object.keys(migrations).sort());
      } finally {
        await store.close();
      }
    },
  );
}

const pgSkip = DIALECTS.find((d) => d.dialect === "postgres")?.skip ?? false;

/**
 * Migrations whose tables and columns today's writes use (every write looks for webhook subscriptions; a new
 * environment notes where its change feed starts), applied up front.
 */
const WRITES_NEED = ["0020_webhooks", "0024_change_retention"];

test(
  "migrations [postgres]: runners starting together on one schema apply each migration once",
  { skip: pgSkip },
  async () => {
    const first = await freshStore("postgres", { migrate: false });
    const second = await freshStore("postgres", { migrate: false });
    try {
      // the second store on the first one's schema
      const same = openStore({ ...first.location, pgPoolSize: 2 });
      try {
        let runs = 0;
        const counted: Migration = {
          up: async (db: AnyDb) => {
            runs++;
            await db.schema.createTable("counted").addColumn("id", "integer").execute();
          },
        };
        const list = { a_first: createTable("first_table"), b_counted: counted };
        const [a, b] = await Promise.all([migrateToLatest(first, list), migrateToLatest(same, list)]);
        assert.equal(runs, 1);
        assert.deepEqual([...a, ...b].sort(), ["a_first", "b_counted"]);
        assert.deepEqual(await recorded(first.db), ["a_first", "b_counted"]);
        // another schema is not affected
        assert.deepEqual(await tables(second.db, "postgres"), []);
      } finally {
        await same.close();
      }
    } finally {
      await first.close();
      await second.close();
    }
  },
);

for (const { dialect, skip } of DIALECTS) {
  test(
    `migrations [${dialect}]: 0013_list_counts backfills the counts of an existing database, then keeps them`,
    { skip },
    async () => {
      const store = await freshStore(dialect, { migrate: false });
      try {
        const before = Object.fromEntries(
          Object.entries(migrations).filter(([name]) => name < "0013" || WRITES_NEED.includes(name)),
        );
        await migrateToLatest(store, before);
        const box = createSecretBox("test-secret-key-that-is-long-enough-000");
        await createOrganizationRecords(store.db, box, { key: "acme", name: "Acme" });
        await createOrganizationRecords(store.db, box, { key: "globex", name: "Globex" });
        const envs = await store.db.selectFrom("environments").selectAll().orderBy("id").execute();
        const at = new Date().toISOString();
        const addUsers = (env: (typeof envs)[number], n: number, prefix: string) =>
          store.db
            .insertInto("users")
            .values(
              Array.from({ length: n }, (_, i) => ({
                id: newId(),
                organization_id: env.organization_id,
                project_id: env.project_id,
                environment_id: env.id,
                key: `${prefix}${i}`,
                email: null,
                first_name: null,
                last_name: null,
                attributes: null,
                created_at: at,
                updated_at: at,
              })),
            )
            .execute();
        for (const [i, env] of envs.entries()) await addUsers(env, i + 1, "old-");
        assert.equal((await migrateToLatest(store))[0], "0013_list_counts");
        const actual = async (table: "users" | "tenants") =>
          Object.fromEntries(
            (
              await store.db
                .selectFrom(table)
                .select(["environment_id", (eb) => eb.fn.countAll<number>().as("n")])
                .groupBy("environment_id")
                .execute()
            ).map((r) => [r.environment_id, Number(r.n)]),
          );
        const counted = async (column: "users" | "tenants") =>
          Object.fromEntries(
            (await store.db.selectFrom("list_counts").select(["environment_id", column]).execute()).map(
              (r) => [r.environment_id, Number(r[column])],
            ),
          );
        assert.equal(Object.keys(await counted("users")).length, envs.length);
        assert.deepEqual(await counted("users"), await actual("users"));
        assert.deepEqual(await counted("tenants"), await actual("tenants"));
        // The triggers run from then on.
        await addUsers(envs[0] as (typeof envs)[number], 2, "new-");
        assert.deepEqual(await counted("users"), await actual("users"));
      } finally {
        await store.close();
      }
    },
  );
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `migrations [${dialect}]: 0014_built_in_resources gives every environment __user and __tenant, keeping those there`,
    { skip },
    async () => {
      const store = await freshStore(dialect, { migrate: false });
      try {
        const before = Object.fromEntries(
          Object.entries(migrations).filter(([name]) => name < "0014" || WRITES_NEED.includes(name)),
        );
        await migrateToLatest(store, before);
        const box = createSecretBox("test-secret-key-that-is-long-enough-000");
        await createOrganizationRecords(store.db, box, { key: "acme", name: "Acme" });
        await createOrganizationRecords(store.db, box, { key: "globex", name: "Globex" });
        const envs = await store.db.selectFrom("environments").selectAll().orderBy("id").execute();
        // As before 0014: no built-in resources, but for a __user made by a user-attribute write in one environment.
        const first = envs[0]!;
        await store.db.deleteFrom("resources").where("built_in", "=", 1).execute();
        const at = new Date().toISOString();
        const userId = newId();
        const columns = {
          organization_id: first.organization_id,
          project_id: first.project_id,
          environment_id: first.id,
        };
        await store.db
          .insertInto("resources")
          .values({
            id: userId,
            ...columns,
            key: "__user",
            name: "User",
            description: null,
            urn: null,
            type_attributes: null,
            built_in: 1,
            created_at: at,
            updated_at: at,
          })
          .execute();
        await store.db
          .insertInto("resource_attributes")
          .values({
            id: newId(),
            ...columns,
            resource_id: userId,
            key: "age",
            type: "number",
            description: null,
            built_in: 0,
            created_at: at,
            updated_at: at,
          })
          .execute();

        assert.equal((await migrateToLatest(store))[0], "0014_built_in_resources");
        const rows = await store.db
          .selectFrom("resources")
          .select(["id", "environment_id", "key", "built_in"])
          .orderBy("environment_id")
          .orderBy("key")
          .execute();
        assert.deepEqual(
          rows.map((r) => `${r.environment_id}:${r.key}:${r.built_in}`),
          envs.flatMap((e) => [`${e.id}:__tenant:1`, `${e.id}:__user:1`]),
        );
        assert.ok(
          rows.some((r) => r.id === userId),
          "the __user already there is kept, with its attributes",
        );
      } finally {
        await store.close();
      }
    },
  );
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `migrations [${dialect}]: 0024_change_retention starts each environment's kept feed at its oldest change`,
    { skip },
    async () => {
      const store = await freshStore(dialect);
      try {
        const box = createSecretBox("test-secret-key-that-is-long-enough-000");
        await createOrganizationRecords(store.db, box, { key: "acme", name: "Acme" });
        const envs = await store.db
          .selectFrom("environments")
          .select(["id", "revision"])
          .orderBy("id")
          .execute();
        // As before 0024, with one environment's feed cut short by hand and another's emptied.
        await sql`alter table environments drop column changes_kept_after`.execute(store.db);
        await sql`delete from gatehouse_migrations where name = '0024_change_retention'`.execute(store.db);
        const [cut, emptied] = envs;
        await store.db
          .insertInto("changes")
          .values(
            [1, 2, 3].map((n) => ({
              environment_id: cut!.id,
              revision: Number(cut!.revision) + n,
              seq: 0,
              kind: "user",
              op: "upsert",
              data: "{}",
              created_at: new Date().toISOString(),
            })),
          )
          .execute();
        await store.db
          .deleteFrom("changes")
          .where("environment_id", "=", cut!.id)
          .where("revision", "<=", Number(cut!.revision) + 1)
          .execute();
        await store.db.deleteFrom("changes").where("environment_id", "=", emptied!.id).execute();

        assert.deepEqual(await migrateToLatest(store), ["0024_change_retention"]);
        const kept = await store.db.selectFrom("environments").select(["id", "changes_kept_after"]).execute();
        const keptAfter = (id: string) => Number(kept.find((e) => e.id === id)?.changes_kept_after);
        assert.equal(keptAfter(cut!.id), Number(cut!.revision) + 1);
        assert.equal(keptAfter(emptied!.id), 0);
      } finally {
        await store.close();
      }
    },
  );
}
