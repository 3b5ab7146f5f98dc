import { test } from "node:test";
import assert from "node:assert/strict";
import { QueryShapes } from "../../src/db/query-shapes.ts";
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
