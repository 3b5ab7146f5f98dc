// Listing walks over real HTTP, on SQLite and on PostgreSQL: an environment written through the API (tenant roles,
// folder derivations 1 to 4 deep, condition sets with several operators) is loaded by the embedded PDP from the
// database; every walk's pages, concatenated, equal what /allowed says pair by pair, on the PDP's port, the API
// port and AuthZEN's searches. A walk interrupted by writes resumes at its first revision; a cursor older than the
// PDP keeps gets 410; bad paging input gets 422.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { describeEachDialect } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { Random } from "../pdp/random-environment.ts";

const TENANTS = ["t1", "t2", "t3"];
const USERS = ["ann", "bob", "cy", "dee", "eve", "fay", "gus", "hal"];
const ACTIONS = ["read", "write", "share"];
const DOCS = 24;

const derived = (permissions: string[]) => ({
  name: "Editor",
  permissions,
  granted_to: { users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }] },
});

/** Set rules: [user condition, permission, resource condition]. */
const RULES: [object, string, object][] = [
  [{ "user.age": { "greater-than": 17 } }, "document:read", { "resource.public": { equals: true } }],
  [
    { "user.clearance": { "greater-than-equals": 3 } },
    "document:write",
    { "resource.level": { "less-than": 3 } },
  ],
  [
    { "user.team": { in: ["red", "blue"] } },
    "document:share",
    { "resource.tags": { array_contains: "red" } },
  ],
  [
    { "user.team": { "not-equals": "red" } },
    "document:read",
    { "resource.title": { "starts-with": "Alpha" } },
  ],
];

describeEachDialect(
  "listing walks with cursors (/list/resources, /list/subjects, AuthZEN searches)",
  (env) => {
    let pdp: TestPdp;
    let envKey = "";
    const S = "/v2/schema/default/production";
    const F = "/v2/facts/default/production";
    const C = "/v2/pdps/default/production";
    const random = new Random(4040);
    const docs: { key: string; tenant: string }[] = [];

    const write = async (method: "POST" | "DELETE", url: string, body?: unknown) => {
      const res = await env().call(envKey, method, url, body);
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
      return Number(res.headers["x-gatehouse-revision"]);
    };

    before(async () => {
      const { acme, call } = env();
      envKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret;
      pdp = await startTestPdp(env(), { listingHistory: 60 });
      await write("POST", `${S}/resources`, {
        key: "folder",
        name: "Folder",
        actions: { read: {} },
        relations: { parent: "folder" },
        roles: { editor: derived(["read"]) },
      });
      await write("POST", `${S}/resources`, {
        key: "document",
        name: "Document",
        actions: Object.fromEntries(ACTIONS.map((a) => [a, {}])),
        relations: { parent: "folder" },
        roles: { editor: derived(["read", "write"]), owner: { name: "Owner", permissions: ACTIONS } },
      });
      await write("POST", `${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] });
      await write("POST", `${S}/roles`, { key: "admin", name: "Admin", permissions: ["document:share"] });
      for (const [i, [user, permission, resource]] of RULES.entries()) {
        await write("POST", `${S}/condition_sets`, {
          key: `u${i}`,
          name: `u${i}`,
          type: "userset",
          conditions: { allOf: [user] },
        });
        await write("POST", `${S}/condition_sets`, {
          key: `r${i}`,
          name: `r${i}`,
          type: "resourceset",
          resource_id: "document",
          conditions: { allOf: [resource] },
        });
        await write("POST", `${F}/set_rules`, { user_set: `u${i}`, permission, resource_set: `r${i}` });
      }
      for (const t of TENANTS) {
        await write("POST", `${F}/tenants`, { key: t, name: t });
        // A chain of folders f<t>-0 <- f<t>-1 <- f<t>-2 <- f<t>-3.
        for (let depth = 1; depth < 4; depth++) {
          await write("POST", `${F}/relationship_tuples`, {
            subject: `folder:f${t}-${depth - 1}`,
            relation: "parent",
            object: `folder:f${t}-${depth}`,
            tenant: t,
          });
        }
      }
      for (let n = 0; n < DOCS; n++) {
        const doc = { key: `d${String(n).padStart(2, "0")}`, tenant: random.pick(TENANTS) };
        docs.push(doc);
        await write("POST", `${F}/resource_instances`, {
          key: doc.key,
          resource: "document",
          tenant: doc.tenant,
          attributes: {
            public: random.chance(0.3),
            level: random.int(5),
            tags: random.some(["red", "green", "blue"], 0.4),
            title: `${random.pick(["Alpha", "Beta"])} ${n}`,
          },
        });
        await write("POST", `${F}/relationship_tuples`, {
          subject: `folder:f${doc.tenant}-${random.int(4)}`,
          relation: "parent",
          object: `document:${doc.key}`,
          tenant: doc.tenant,
        });
      }
      for (const user of USERS) {
        await write("POST", `${F}/users`, {
          key: user,
          attributes: {
            age: 10 + random.int(30),
            clearance: random.int(5),
            team: random.pick(["red", "blue", "green"]),
          },
        });
        if (random.chance(0.4)) {
          const role = random.pick(["viewer", "admin"]);
          await write("POST", `${F}/role_assignments`, { user, role, tenant: random.pick(TENANTS) });
        }
        const t = random.pick(TENANTS);
        await write("POST", `${F}/role_assignments`, {
          user,
          role: "editor",
          tenant: t,
          resource_instance: `folder:f${t}-${random.int(4)}`,
        });
        const doc = random.pick(docs);
        await write("POST", `${F}/role_assignments`, {
          user,
          role: "owner",
          tenant: doc.tenant,
          resource_instance: `document:${doc.key}`,
        });
      }
    });

    after(async () => {
      await pdp?.close();
    });

    /** Every page of a walk on the PDP's port, concatenated, with the revisions they answered at. */
    async function walk(path: string, body: object, pageSize: number, headers: Record<string, string> = {}) {
      const items: string[] = [];
      const revisions = new Set<number>();
      let cursor: string | null = null;
      do {
        const res = await pdp.call(envKey, path, { ...body, page_size: pageSize, cursor }, headers);
        assert.equal(res.status, 200, res.body);
        assert.ok(res.json.results.length <= pageSize);
        items.push(...res.json.results.map((r: { key: string }) => r.key));
        revisions.add(res.json.revision);
        cursor = res.json.next_cursor;
      } while (cursor !== null);
      return { items: items.sort(), revisions };
    }

    const allowedDocs = async (user: string, action: string, tenant?: string) => {
      const checks = docs.map((d) => ({
        user,
        action,
        resource: { type: "document", key: d.key, ...(tenant && { tenant }) },
      }));
      const res = await pdp.call(envKey, "/allowed/bulk", checks);
      assert.equal(res.status, 200, res.body);
      return docs.filter((_, i) => res.json.allow[i].allow).map((d) => d.key);
    };

    const allowedUsers = async (action: string, resource: object) => {
      const res = await pdp.call(
        envKey,
        "/allowed/bulk",
        USERS.map((user) => ({ user, action, resource })),
      );
      assert.equal(res.status, 200, res.body);
      return USERS.filter((_, i) => res.json.allow[i].allow);
    };

    test("walks, page by page, hold exactly what /allowed allows, for every user, action and document", async () => {
      let listed = 0;
      for (const user of USERS) {
        for (const action of ACTIONS) {
          for (const tenant of [undefined, "t1"]) {
            const resource = { type: "document", ...(tenant && { tenant }) };
            const got = await walk("/list/resources", { user, action, resource }, 1 + random.int(4));
            assert.deepEqual(
              got.items,
              await allowedDocs(user, action, tenant),
              `${user} ${action} ${tenant}`,
            );
            assert.equal(got.revisions.size, 1);
            listed += got.items.length;
          }
        }
      }
      for (const doc of docs.slice(0, 10)) {
        for (const action of ACTIONS) {
          const resource = { type: "document", key: doc.key };
          const got = await walk("/list/subjects", { action, resource }, 2);
          assert.deepEqual(got.items, (await allowedUsers(action, resource)).sort(), `${action} ${doc.key}`);
        }
      }
      const typeLevel = { type: "document", tenant: "t2" };
      const got = await walk("/list/subjects", { action: "share", resource: typeLevel }, 3);
      assert.deepEqual(got.items, (await allowedUsers("share", typeLevel)).sort());
      assert.ok(listed > 50, `only ${listed} documents listed: the environment grants too little`);
    });

    test("the API port and AuthZEN's searches page the same walks", async () => {
      const { call } = env();
      const body = { user: "ann", action: "read", resource: "document" };
      const expected = await allowedDocs("ann", "read");
      const viaApi: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await call(envKey, "POST", `${C}/list/resources`, {
          ...body,
          page_size: 2,
          ...(cursor && { cursor }),
        });
        assert.equal(res.status, 200, res.body);
        viaApi.push(...res.json.results.map((r: { key: string }) => r.key));
        cursor = res.json.next_cursor;
      } while (cursor !== null);
      assert.deepEqual(viaApi.sort(), expected);

      const viaAuthzen: string[] = [];
      let token: string | undefined;
      do {
        const res = await pdp.call(envKey, "/access/v1/search/resource", {
          subject: { type: "user", id: "ann" },
          action: { name: "read" },
          resource: { type: "document" },
          page: { limit: 3, ...(token && { token }) },
        });
        assert.equal(res.status, 200, res.body);
        assert.equal(res.json.page.count, res.json.results.length);
        viaAuthzen.push(...res.json.results.map((r: { id: string }) => r.id));
        token = res.json.page.next_token || undefined;
      } while (token !== undefined);
      assert.deepEqual(viaAuthzen.sort(), expected);

      const subjects = await pdp.call(envKey, "/access/v1/search/subject", {
        subject: { type: "user" },
        action: { name: "read" },
        resource: { type: "document", id: docs[0]?.key },
      });
      assert.equal(subjects.status, 200, subjects.body);
      const resource = { type: "document", key: docs[0]?.key };
      assert.deepEqual(
        subjects.json.results.map((r: { id: string }) => r.id).sort(),
        (await allowedUsers("read", resource)).sort(),
      );
    });

    test("a walk interrupted by writes resumes at its first revision; a new walk sees the writes", async () => {
      const user = "cy";
      const body = { user, action: "read", resource: { type: "document" } };
      const before = await allowedDocs(user, "read");
      const subjectsBody = { action: "read", resource: { type: "document", key: docs[1]?.key } };
      const subjectsBefore = (await allowedUsers("read", { type: "document", key: docs[1]?.key })).sort();
      const first = await pdp.call(envKey, "/list/resources", { ...body, page_size: 1 });
      const firstSubjects = await pdp.call(envKey, "/list/subjects", { ...subjectsBody, page_size: 1 });
      assert.ok(first.json.next_cursor !== null && firstSubjects.json.next_cursor !== null);
      // Writes: the user becomes a viewer everywhere, loses a document, gains ownership of another.
      let revision = 0;
      for (const t of TENANTS)
        revision = await write("POST", `${F}/role_assignments`, { user, role: "viewer", tenant: t });
      revision = await write("DELETE", `${F}/resource_instances/document:${docs[1]?.key}`);
      const headers = { "x-gatehouse-min-revision": String(revision) };
      // The rest of the interrupted walk, from its cursor, at the PDP that now holds the writes.
      const items = first.json.results.map((r: { key: string }) => r.key);
      let cursor: string | null = first.json.next_cursor;
      while (cursor !== null) {
        const res = await pdp.call(envKey, "/list/resources", { ...body, page_size: 1, cursor }, headers);
        assert.equal(res.status, 200, res.body);
        assert.equal(res.json.revision, first.json.revision);
        items.push(...res.json.results.map((r: { key: string }) => r.key));
        cursor = res.json.next_cursor;
      }
      assert.deepEqual(items.sort(), before);
      const subjects = firstSubjects.json.results.map((r: { key: string }) => r.key);
      cursor = firstSubjects.json.next_cursor;
      while (cursor !== null) {
        const res = await pdp.call(
          envKey,
          "/list/subjects",
          { ...subjectsBody, page_size: 1, cursor },
          headers,
        );
        assert.equal(res.status, 200, res.body);
        subjects.push(...res.json.results.map((r: { key: string }) => r.key));
        cursor = res.json.next_cursor;
      }
      assert.deepEqual(subjects.sort(), subjectsBefore);
      // A new walk answers the newest revision: every remaining document (viewer in every tenant).
      const fresh = await walk("/list/resources", body, 5, headers);
      assert.deepEqual(
        fresh.items,
        docs
          .filter((d) => d.key !== docs[1]?.key)
          .map((d) => d.key)
          .sort(),
      );
      assert.ok(([...fresh.revisions][0] as number) >= revision);
    });

    test("a cursor older than the PDP keeps gets 410; a bad cursor or page size gets 422", async () => {
      const body = { user: "bob", action: "read", resource: "document" };
      const first = await pdp.call(envKey, "/list/resources", { ...body, page_size: 1 });
      assert.equal(first.status, 200, first.body);
      const token = await pdp.call(envKey, "/access/v1/search/resource", {
        subject: { type: "user", id: "bob" },
        action: { name: "read" },
        resource: { type: "document" },
        page: { limit: 1 },
      });
      let revision = 0;
      // More writes than the PDP's history of 60 holds.
      for (let n = 0; n < 40; n++) {
        revision = await write("POST", `${F}/resource_instances`, {
          key: `extra-${n}`,
          resource: "document",
          tenant: "t1",
          attributes: { level: n, tags: ["red"], title: `Alpha extra ${n}` },
        });
      }
      const headers = { "x-gatehouse-min-revision": String(revision) };
      const gone = await pdp.call(
        envKey,
        "/list/resources",
        { ...body, page_size: 1, cursor: first.json.next_cursor },
        headers,
      );
      assert.equal(gone.status, 410, gone.body);
      assert.equal(gone.json.error_code, "CURSOR_EXPIRED");
      const goneToken = await pdp.call(envKey, "/access/v1/search/resource", {
        subject: { type: "user", id: "bob" },
        action: { name: "read" },
        resource: { type: "document" },
        page: { limit: 1, token: token.json.page.next_token },
      });
      assert.equal(goneToken.status, 410, goneToken.body);

      const forged = await pdp.call(envKey, "/list/resources", { ...body, cursor: "bm90LWEtY3Vyc29y" });
      assert.equal(forged.status, 422, forged.body);
      const other = await pdp.call(envKey, "/list/resources", {
        ...body,
        user: "ann",
        cursor: first.json.next_cursor,
      });
      assert.equal(other.status, 422, other.body);
      for (const page_size of [0, 1001, "5", 1.5]) {
        const res = await pdp.call(envKey, "/list/resources", { ...body, page_size });
        assert.equal(res.status, 422, `${page_size}: ${res.body}`);
      }
      const withKey = await pdp.call(envKey, "/list/resources", { ...body, resource: "document:d00" });
      assert.equal(withKey.status, 422, withKey.body);
      const api = await env().call(envKey, "POST", `${C}/list/resources`, {
        ...body,
        cursor: first.json.next_cursor,
      });
      assert.equal(api.status, 410, api.body);
    });
  },
);
