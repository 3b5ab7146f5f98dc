import { test } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { factsUrl } from "../helpers/facts.ts";
import { ANCHOR_EVERY } from "../../src/domain/facts/list-pages.repo.ts";

/** The keys of a list in its documented order (created_at, then id), straight from the database. */
const orderedKeys = async (e: TestEnv, table: "users" | "tenants"): Promise<string[]> =>
  (
    await e.store.db
      .selectFrom(table)
      .select("key")
      .where("environment_id", "=", e.acme.envs.production)
      .orderBy("created_at")
      .orderBy("id")
      .execute()
  ).map((r) => r.key);

describeEachDialect(
  "list paging past the anchors: order and total_count after inserts and deletes",
  (env) => {
    const ok = async (method: "POST" | "DELETE", path: string, body?: unknown) => {
      const res = await env().call(env().acme.adminKey, method, `${factsUrl(env().acme)}${path}`, body);
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.body}`);
    };
    const bulkUsers = async (prefix: string, count: number) => {
      for (let from = 0; from < count; from += 1000) {
        const n = Math.min(1000, count - from);
        await ok("POST", "/bulk/users", {
          operations: Array.from({ length: n }, (_, i) => ({ key: `${prefix}-${from + i}` })),
        });
      }
    };

    /** Every page of `pages` (at `perPage`) holds the expected slice of the database's order, with the total. */
    async function assertPages(table: "users" | "tenants", perPage: number, pages: number[]) {
      const e = env();
      const expected = await orderedKeys(e, table);
      for (const page of pages) {
        const extra = table === "tenants" ? "&include_total_count=true" : "";
        const res = await e.call(
          e.acme.adminKey,
          "GET",
          `${factsUrl(e.acme)}/${table}?page=${page}&per_page=${perPage}${extra}`,
        );
        assert.equal(res.status, 200, res.body);
        const from = (page - 1) * perPage;
        assert.deepEqual(
          res.json.data.map((r: { key: string }) => r.key),
          expected.slice(from, from + perPage),
          `${table} page ${page} of ${perPage}`,
        );
        assert.equal(res.json.total_count, expected.length, `${table} total_count on page ${page}`);
        assert.equal(res.json.page_count, Math.ceil(expected.length / perPage));
      }
    }

    test("users: pages before, across and after the anchors match OFFSET order; inserts and deletes move them", async () => {
      assert.equal(ANCHOR_EVERY, 1000, "the page numbers below straddle anchors 1,000 rows apart");
      // Two bulk requests (each row of a request shares created_at, so id breaks the ties) and single writes.
      await bulkUsers("a", 2000);
      for (const key of ["s1", "s2", "s3"]) await ok("POST", "/users", { key });
      await bulkUsers("b", 600);
      const pages = [1, 9, 10, 11, 20, 21, 26, 27];
      await assertPages("users", 100, pages);
      await assertPages("users", 7, [142, 143, 286, 372, 373]);
      // Deletes before the anchors shift every later row: the anchors of the old version must not be used.
      await ok("DELETE", "/users/a-5");
      await ok("DELETE", "/bulk/users", { idents: ["a-1500", "a-1501", "s2"] });
      await assertPages("users", 100, pages);
      await bulkUsers("c", 5);
      await assertPages("users", 100, [10, 11, 26, 27]);
      await assertPages("users", 7, [142, 143, 286, 372, 373]);
    });

    test("tenants: the same past 1,000 tenants, with the default tenant deleted", async () => {
      for (let from = 0; from < 1200; from += 1000) {
        const n = Math.min(1000, 1200 - from);
        await ok("POST", "/bulk/tenants", {
          operations: Array.from({ length: n }, (_, i) => ({ key: `t-${from + i}`, name: `t ${from + i}` })),
        });
      }
      await assertPages("tenants", 100, [1, 10, 11, 12, 13]);
      await ok("DELETE", "/tenants/default");
      await ok("DELETE", "/tenants/t-999");
      await assertPages("tenants", 100, [1, 10, 11, 12, 13]);
    });
  },
);
