import { test } from "node:test";
import assert from "node:assert/strict";
import { QueryShapes, SHAPED_ROWS } from "../../src/db/query-shapes.ts";
import { newId } from "../../src/lib/ids.ts";
import { DIALECTS, freshStore } from "../helpers/stores.ts";

for (const { dialect, skip } of DIALECTS) {
  test(
    `query shapes [${dialect}]: built once, then run with each call's values; a value used twice or not at all is refused`,
    { skip },
    async () => {
      const store = await freshStore(dialect);
      try {
        const db = store.db;
        const shapes = new QueryShapes();
        let builds = 0;
        const find = (key: string, name: string) =>
          shapes.rows(db, "organization by key and name", [key, name], ([k, n]) => {
            builds += 1;
            return db
              .selectFrom("organizations")
              .select(["key", "name"])
              .where("key", "=", k as string)
              .where("name", "=", n as string)
              .where("key", "!=", "a constant stays a constant");
          });
        const at = new Date().toISOString();
        for (const key of ["acme", "globex", "initech"])
          await db
            .insertInto("organizations")
            .values({
              id: newId(),
              key,
              name: key.toUpperCase(),
              settings: null,
              is_enterprise: 0,
              created_at: at,
              updated_at: at,
            })
            .execute();
        const all = await db.selectFrom("organizations").select(["key", "name"]).execute();
        assert.equal(all.length, 3);
        for (const env of all) assert.deepEqual(await find(env.key, env.name), [env]);
        assert.deepEqual(await find(all[0]?.key as string, "no such name"), []);
        assert.equal(builds, 1);
        await assert.rejects(
          shapes.rows(db, "twice", ["x"], ([x]) =>
            db
              .selectFrom("organizations")
              .select("key")
              .where("key", "=", x as string)
              .where("name", "=", x as string),
          ),
          /exactly once/,
        );
        await assert.rejects(
          shapes.rows(db, "unused", ["x", "y"], ([x]) =>
            db
              .selectFrom("organizations")
              .select("key")
              .where("key", "=", x as string),
          ),
          /exactly once/,
        );
      } finally {
        await store.close();
      }
    },
  );
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `query shapes' insert [${dialect}]: one shape per columns and row count up to SHAPED_ROWS, the same rows as Kysely's insert; others built for their call`,
    { skip },
    async () => {
      const store = await freshStore(dialect);
      try {
        const db = store.db;
        const shapes = new QueryShapes();
        const at = new Date().toISOString();
        const org = (key: string, settings?: string | null) => ({
          id: newId(),
          key,
          name: key.toUpperCase(),
          settings,
          is_enterprise: 0,
          created_at: at,
          updated_at: at,
        });
        type Org = ReturnType<typeof org>;
        // What each build was given: markers (a kept shape's one build) or the call's own rows.
        const built: Org[][] = [];
        const insert = (rows: Org[]) =>
          shapes.insert(db, "organizations", rows, (some) => {
            built.push([...some]);
            return db
              .insertInto("organizations")
              .values(some)
              .onConflict((oc) => oc.column("key").doNothing())
              .returning("key");
          });
        const read = async (keys: string[]) =>
          db
            .selectFrom("organizations")
            .select(["key", "name", "settings", "is_enterprise", "created_at"])
            .where("key", "in", keys)
            .orderBy("key")
            .execute();
        const expected = (rows: Org[]) =>
          rows
            .map(({ key, name, settings, is_enterprise, created_at }) => ({
              key,
              name,
              settings: settings ?? null,
              is_enterprise,
              created_at,
            }))
            .sort((a, b) => (a.key < b.key ? -1 : 1));

        const first = [org("a1", '{"x":1}'), org("a2", null), org("a3", "{}")];
        const result = await insert(first);
        assert.deepEqual(
          result.rows.map((r) => r.key),
          ["a1", "a2", "a3"],
        );
        assert.deepEqual(await read(["a1", "a2", "a3"]), expected(first));
        // Same columns and count: the kept shape, with these rows' values (a null where the first had text).
        const second = [org("b1", null), org("b2", '{"y":2}'), org("b3", null)];
        await insert(second);
        assert.deepEqual(await read(["b1", "b2", "b3"]), expected(second));
        assert.equal(built.length, 1);
        assert.notDeepEqual(built[0], first);
        // A key taken: nothing inserted (the statement's ON CONFLICT kept), as a user's insert relies on.
        const taken = await insert([org("a1", null), org("c2", null), org("c3", null)]);
        assert.deepEqual(
          taken.rows.map((r) => r.key),
          ["c2", "c3"],
        );
        assert.equal(built.length, 1);
        // Another count: a shape of its own.
        await insert([org("d1", null)]);
        assert.equal(built.length, 2);
        // Columns that differ between rows (undefined leaves one out) and more rows than SHAPED_ROWS: Kysely's
        // insert of the call's own rows.
        const mixed = [org("e1", "{}"), org("e2")];
        await insert(mixed);
        assert.deepEqual(built.at(-1), mixed);
        assert.deepEqual(await read(["e1", "e2"]), expected(mixed));
        const many = Array.from({ length: SHAPED_ROWS + 1 }, (_, i) => org(`f${i}`, null));
        const manyResult = await insert(many);
        assert.equal(manyResult.rows.length, many.length);
        assert.deepEqual(built.at(-1), many);
        assert.deepEqual(await read(many.map((o) => o.key)), expected(many));
      } finally {
        await store.close();
      }
    },
  );
}
