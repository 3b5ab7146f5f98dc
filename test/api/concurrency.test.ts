import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { InjectOptions } from "fastify";
import { describeEachDialect, type Reply } from "../helpers/app.ts";
import { changesAfter, factsUrl, revisionOf } from "../helpers/facts.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";
import { documentResource, folderResource, schemaUrl } from "../helpers/schema-api.ts";
import { createEngine, type Engine } from "../../src/pdp/engine/index.ts";
import { readSnapshot } from "../../src/domain/environment-snapshot.ts";
import type { StoredChange } from "../../src/changes/feed.ts";

/**
 * Idempotent writes racing each other: two requests that would both succeed one after the other both succeed
 * together. On PostgreSQL the transactions overlap (the pool has several connections), so the loser of an insert
 * finds the winner's row only after its own read said "absent"; on SQLite they take turns. Each pair runs ROUNDS
 * times with fresh keys; afterwards the feed has every revision once and the embedded PDP, fed only by the feed,
 * decides as an engine built from the database.
 */
const ROUNDS = 20;

type Request = [method: InjectOptions["method"], url: string, body?: unknown];

describeEachDialect("racing idempotent writes", (env) => {
  let F = "";
  let envId = "";
  let firstRevision = 0;
  let pdp: TestPdp;
  let envKey = "";

  const call = ([method, url, body]: Request) => env().call(env().acme.adminKey, method, url, body);
  const must = async (request: Request) => {
    const res = await call(request);
    assert.ok(res.status < 300, `${request[0]} ${request[1]} -> ${res.status} ${res.body}`);
    return res;
  };
  /** Both requests at once; their statuses in the order given. */
  const race = (a: Request, b: Request): Promise<[Reply, Reply]> => Promise.all([call(a), call(b)]);
  const statuses = (replies: Reply[]) => replies.map((r) => r.status).sort();
  const bodies = (replies: Reply[]) => replies.map((r) => r.body).join(" | ");

  /** Rows of `table` in the environment whose `column` (a key) is `key`. */
  const rows = async (
    table: "users" | "resource_instances" | "relationship_tuples" | "role_assignments",
    where: { key?: string; user?: string; object?: string },
  ) => {
    const db = env().store.db;
    let n: number | string | bigint;
    if (table === "role_assignments") {
      ({ n } = await db
        .selectFrom("role_assignments as ra")
        .innerJoin("users as u", "u.id", "ra.user_id")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("ra.environment_id", "=", envId)
        .where("u.key", "=", where.user ?? "")
        .executeTakeFirstOrThrow());
    } else if (table === "relationship_tuples") {
      ({ n } = await db
        .selectFrom("relationship_tuples as rt")
        .innerJoin("resource_instances as o", "o.id", "rt.object_id")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("rt.environment_id", "=", envId)
        .where("o.key", "=", where.object ?? "")
        .executeTakeFirstOrThrow());
    } else {
      ({ n } = await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("environment_id", "=", envId)
        .where("key", "=", where.key ?? "")
        .executeTakeFirstOrThrow());
    }
    return Number(n);
  };
  /** How many of the feed's changes are upserts of `kind` whose data has the given fields. */
  const upserts = (feed: StoredChange[], kind: string, match: Record<string, unknown>) =>
    feed.filter(
      (c) =>
        c.kind === kind &&
        c.op === "upsert" &&
        Object.entries(match).every(([k, v]) => (c.data as unknown as Record<string, unknown>)[k] === v),
    ).length;
  /**
   * Runs ROUNDS rounds at once, each with its own keys (so that each database's run takes seconds, SQLite's
   * commits sharing their fsyncs), then `check` for each round with the feed's changes of the rounds.
   */
  const rounds = async (
    round: (r: number) => Promise<void>,
    check: (r: number, feed: StoredChange[]) => Promise<void>,
  ) => {
    const since = await revisionOf(env(), envId);
    await Promise.all(Array.from({ length: ROUNDS }, (_, r) => round(r)));
    const feed = await changesAfter(env(), envId, since);
    for (let r = 0; r < ROUNDS; r += 1) await check(r, feed);
  };

  before(async () => {
    const e = env();
    F = factsUrl(e.acme);
    envId = e.acme.envs.production;
    const S = schemaUrl(e.acme);
    await must(["POST", `${S}/resources`, folderResource()]);
    await must(["POST", `${S}/resources`, documentResource()]);
    await must(["POST", `${S}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] }]);
    await must(["POST", `${S}/roles`, { key: "admin", name: "Admin", permissions: ["document:write"] }]);
    await must(["POST", `${F}/tenants`, { key: "t1", name: "T1" }]);
    await must(["POST", `${F}/users`, { key: "carol" }]);
    envKey = (await must(["GET", "/v2/api-key/default/production"])).json.secret;
    pdp = await startTestPdp(e);
    // Loads the replica now: everything below reaches it through the feed only.
    await pdp.call(envKey, "/allowed", { user: "nobody", action: "read", resource: "document" });
    firstRevision = await revisionOf(e, envId);
  });
  after(async () => {
    await pdp?.close();
  });

  test("PUT users/{key} of a new key twice: 201 and 200, one user", async () => {
    await rounds(
      async (r) => {
        const put: Request = ["PUT", `${F}/users/put-${r}`, { email: `put-${r}@example.com` }];
        const replies = await race(put, put);
        assert.deepEqual(statuses(replies), [200, 201], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("users", { key: `put-${r}` }), 1);
        // The winner created it, the loser replaced it: two records, as one after the other.
        assert.equal(upserts(feed, "user", { key: `put-${r}` }), 2);
      },
    );
  });

  test("users.sync (PUT with the key and roles in the body) twice: 201 and 200, one user, one role", async () => {
    await rounds(
      async (r) => {
        const sync: Request = [
          "PUT",
          `${F}/users/sync-${r}`,
          { key: `sync-${r}`, first_name: "Sync", role_assignments: [{ role: "viewer", tenant: "t1" }] },
        ];
        const replies = await race(sync, sync);
        assert.deepEqual(statuses(replies), [200, 201], bodies(replies));
        for (const reply of replies) {
          assert.equal(reply.json.key, `sync-${r}`);
          assert.deepEqual(reply.json.roles, [{ role: "viewer", tenant: "t1" }]);
        }
      },
      async (r, feed) => {
        assert.equal(await rows("users", { key: `sync-${r}` }), 1);
        assert.equal(await rows("role_assignments", { user: `sync-${r}` }), 1);
        assert.equal(upserts(feed, "role_assignment", { user: `sync-${r}` }), 1);
      },
    );
  });

  test("users.sync of an existing user adding a role, twice: 200 and 200, the role once", async () => {
    await rounds(
      async (r) => {
        await must(["POST", `${F}/users`, { key: `login-${r}` }]);
        const sync: Request = [
          "PUT",
          `${F}/users/login-${r}`,
          { key: `login-${r}`, role_assignments: [{ role: "admin", tenant: "t1" }] },
        ];
        const replies = await race(sync, sync);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("role_assignments", { user: `login-${r}` }), 1);
        assert.equal(upserts(feed, "role_assignment", { user: `login-${r}` }), 1);
      },
    );
  });

  test("the same PUT bulk/users twice: 200 and 200, each user once", async () => {
    await rounds(
      async (r) => {
        const put: Request = [
          "PUT",
          `${F}/bulk/users`,
          {
            operations: [
              { key: `bulk-${r}-a`, role_assignments: [{ role: "viewer", tenant: "t1" }] },
              { key: `bulk-${r}-b`, email: `bulk-${r}@example.com` },
            ],
          },
        ];
        const replies = await race(put, put);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("users", { key: `bulk-${r}-a` }), 1);
        assert.equal(await rows("users", { key: `bulk-${r}-b` }), 1);
        assert.equal(await rows("role_assignments", { user: `bulk-${r}-a` }), 1);
        assert.equal(upserts(feed, "role_assignment", { user: `bulk-${r}-a` }), 1);
      },
    );
  });

  test("POST and PUT bulk/users of the same key: the PUT succeeds, the POST succeeds or is a 409", async () => {
    await rounds(
      async (r) => {
        const body = { operations: [{ key: `mixed-${r}` }] };
        const [posted, put] = await race(["POST", `${F}/bulk/users`, body], ["PUT", `${F}/bulk/users`, body]);
        assert.equal(put.status, 200, put.body);
        // A create of a key that the PUT wrote first is a 409, as one after the other.
        if (posted.status !== 200) {
          assert.equal(posted.status, 409, posted.body);
          assert.equal(posted.json.error_code, "DUPLICATE_ENTITY");
          assert.match(posted.json.message, new RegExp(`mixed-${r}`));
        }
      },
      async (r) => assert.equal(await rows("users", { key: `mixed-${r}` }), 1),
    );
  });

  test("the same PUT bulk/resource_instances twice: 200 and 200, the instance once", async () => {
    await rounds(
      async (r) => {
        const put: Request = [
          "PUT",
          `${F}/bulk/resource_instances`,
          { operations: [{ key: `doc-${r}`, resource: "document", tenant: "t1", attributes: { round: r } }] },
        ];
        const replies = await race(put, put);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("resource_instances", { key: `doc-${r}` }), 1);
        // Created, then its attributes replaced by the same: two records, as one after the other.
        assert.equal(upserts(feed, "resource_instance", { key: `doc-${r}` }), 2);
      },
    );
  });

  test("the same relationship_tuples/bulk batch twice: 200 and 200, the tuple and its new instance once", async () => {
    await rounds(
      async (r) => {
        // carol edits the folder, so the tuple makes her an editor of the document (the PDP check below sees it).
        await must([
          "POST",
          `${F}/role_assignments`,
          { user: "carol", role: "editor", resource_instance: `folder:folder-${r}`, tenant: "t1" },
        ]);
        const batch: Request = [
          "POST",
          `${F}/relationship_tuples/bulk`,
          {
            operations: [
              { subject: `folder:folder-${r}`, relation: "parent", object: `document:in-${r}`, tenant: "t1" },
            ],
          },
        ];
        const replies = await race(batch, batch);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("relationship_tuples", { object: `in-${r}` }), 1);
        assert.equal(await rows("resource_instances", { key: `in-${r}` }), 1);
        assert.equal(upserts(feed, "relationship_tuple", { object: `document:in-${r}` }), 1);
        assert.equal(upserts(feed, "resource_instance", { key: `in-${r}` }), 1);
      },
    );
  });

  test("the same role_assignments/bulk items twice: 200 and 200, each assignment once", async () => {
    const items = (r: number) => [
      { user: `known-${r}`, role: "viewer", tenant: "t1" },
      // A user and an instance that the request creates (missing_user_policy=create).
      { user: `bare-${r}`, role: "viewer", tenant: "t1" },
      { user: `bare-${r}`, role: "editor", resource_instance: `folder:assigned-${r}`, tenant: "t1" },
    ];
    await rounds(
      async (r) => {
        await must(["POST", `${F}/users`, { key: `known-${r}` }]);
        const bulk: Request = ["POST", `${F}/role_assignments/bulk?missing_user_policy=create`, items(r)];
        const replies = await race(bulk, bulk);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
        const created = replies.map((x) => x.json.assignments_created as number);
        assert.equal(created[0]! + created[1]!, 3, `assignments_created ${created.join(" + ")}`);
      },
      async (r, feed) => {
        assert.equal(await rows("users", { key: `bare-${r}` }), 1);
        assert.equal(await rows("resource_instances", { key: `assigned-${r}` }), 1);
        assert.equal(await rows("role_assignments", { user: `known-${r}` }), 1);
        assert.equal(await rows("role_assignments", { user: `bare-${r}` }), 2);
        assert.equal(upserts(feed, "user", { key: `bare-${r}` }), 1);
        assert.equal(upserts(feed, "resource_instance", { key: `assigned-${r}` }), 1);
        for (const { user, role } of items(r)) {
          assert.equal(upserts(feed, "role_assignment", { user, role }), 1, `${user} ${role}`);
        }
      },
    );
  });

  test("the same role_assignments/bulk item renewing an ended role twice: its delete announced once", async () => {
    // Assignments that end in a moment and are still in the table (the purge runs once a minute).
    const ends = new Date(Date.now() + 1500).toISOString();
    await Promise.all(
      Array.from({ length: ROUNDS }, (_, r) =>
        must([
          "POST",
          `${F}/users`,
          { key: `renew-${r}`, role_assignments: [{ role: "viewer", tenant: "t1", expires_at: ends }] },
        ]),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, Date.parse(ends) - Date.now() + 50));
    await rounds(
      async (r) => {
        const bulk: Request = [
          "POST",
          `${F}/role_assignments/bulk`,
          [{ user: `renew-${r}`, role: "viewer", tenant: "t1" }],
        ];
        const replies = await race(bulk, bulk);
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("role_assignments", { user: `renew-${r}` }), 1);
        const deletes = feed.filter(
          (c) =>
            c.kind === "role_assignment" &&
            c.op === "delete" &&
            (c.data as { user: string }).user === `renew-${r}`,
        );
        assert.equal(deletes.length, 1, `renew-${r}: ${JSON.stringify(deletes)}`);
        assert.equal(upserts(feed, "role_assignment", { user: `renew-${r}` }), 1);
      },
    );
  });

  test("two different tuples creating the same new instance: both written, the instance once", async () => {
    await rounds(
      async (r) => {
        const tuple = (folder: string): Request => [
          "POST",
          `${F}/relationship_tuples`,
          { subject: `folder:${folder}`, relation: "parent", object: `document:shared-${r}`, tenant: "t1" },
        ];
        const replies = await race(tuple(`left-${r}`), tuple(`right-${r}`));
        assert.deepEqual(statuses(replies), [200, 200], bodies(replies));
      },
      async (r, feed) => {
        assert.equal(await rows("relationship_tuples", { object: `shared-${r}` }), 2);
        assert.equal(await rows("resource_instances", { key: `shared-${r}` }), 1);
        assert.equal(upserts(feed, "resource_instance", { key: `shared-${r}` }), 1);
      },
    );
  });

  test("a plain create is not an upsert: POST users of one new key twice is 201 and 409", async () => {
    await rounds(
      async (r) => {
        const post: Request = ["POST", `${F}/users`, { key: `create-${r}` }];
        const replies = await race(post, post);
        assert.deepEqual(statuses(replies), [201, 409], bodies(replies));
        assert.equal(replies.find((x) => x.status === 409)?.json.error_code, "DUPLICATE_ENTITY");
      },
      async (r) => assert.equal(await rows("users", { key: `create-${r}` }), 1),
    );
  });

  test("afterwards: every revision in the feed once, and the PDP decides as the database says", async () => {
    const e = env();
    const last = await revisionOf(e, envId);
    const revisions = new Set((await changesAfter(e, envId, firstRevision)).map((c) => c.revision));
    const expected = Array.from({ length: last - firstRevision }, (_, i) => firstRevision + 1 + i);
    assert.deepEqual(
      [...revisions].sort((a, b) => a - b),
      expected,
    );

    const target = await pdp.pdp.resolve(`Bearer ${envKey}`, { headers: {} } as never);
    await target.replica.catchUp();
    assert.equal(target.replica.revision, last);
    const fresh = createEngine((await readSnapshot(e.store.db, e.dialect, envId)).data);
    const users = await e.store.db
      .selectFrom("users")
      .select("key")
      .where("environment_id", "=", envId)
      .orderBy("key")
      .execute();
    const view = (engine: Engine) =>
      users.map(({ key }) =>
        JSON.stringify([
          key,
          engine.userPermissions({ user: { key } }),
          engine.userTenants(key),
          engine.searchResources({ user: { key }, action: "write", type: "document", context: {} }),
        ]),
      );
    const replica = view(target.replica.engine);
    const database = view(fresh);
    assert.deepEqual(
      replica.filter((line, i) => line !== database[i]).slice(0, 3),
      [],
      "the replica differs from the database",
    );
    // The tuple batches made carol an editor of each round's document (when that test ran).
    const carol = database.find((line) => line.startsWith('["carol"'));
    for (let r = 0; r < ROUNDS; r += 1) {
      if ((await rows("resource_instances", { key: `in-${r}` })) === 0) continue;
      assert.ok(carol?.includes(`in-${r}`), `carol edits document:in-${r}`);
    }
  });
});
