import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { describeEachDialect } from "../helpers/app.ts";
import type { TestStore } from "../helpers/stores.ts";
import { purgeChanges } from "../../src/changes/retention.ts";
import { feedBounds } from "../../src/changes/feed.ts";
import { now, toTimestamp } from "../../src/lib/time.ts";

interface SseEvent {
  id: string;
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
}

/** Opens an SSE stream over real HTTP (node:http, closed when done): its status, content type and events. */
async function sse(port: number, path: string, headers: Record<string, string>) {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get({
      host: "127.0.0.1",
      port,
      path,
      headers: { accept: "text/event-stream", ...headers },
    });
    req.on("response", resolve);
    req.on("error", reject);
  });
  return {
    status: res.statusCode,
    type: res.headers["content-type"],
    /** Reads events until `enough` says so, then closes the connection. */
    async read(enough: (events: SseEvent[]) => boolean): Promise<SseEvent[]> {
      const events: SseEvent[] = [];
      let buffer = "";
      const deadline = Date.now() + 20_000;
      try {
        for await (const chunk of res) {
          buffer += String(chunk);
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = Object.fromEntries(
              block
                .split("\n")
                .filter((l) => !l.startsWith(":") && l.includes(":"))
                .map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]),
            );
            if (fields.event) {
              events.push({
                id: String(fields.id),
                event: fields.event,
                data: JSON.parse(String(fields.data)),
              });
            }
          }
          if (enough(events)) break;
          assert.ok(Date.now() < deadline, `timed out with ${events.length} events`);
        }
      } finally {
        res.destroy();
      }
      return events;
    },
  };
}

describeEachDialect("change stream", (env) => {
  const url = "/v2/facts/default/production/changes";

  test("long poll: the changes after a revision in the public shape, in order, paged by revision", async () => {
    const { acme, globex, call } = env();
    const first = await call(acme.adminKey, "GET", `${url}?after=0`);
    assert.equal(first.status, 200, first.body);
    const start = first.json.head;
    assert.equal(first.json.revision, start);
    // The environment's creation: the default tenant and the built-in resources.
    assert.ok(first.json.changes.some((c: { object_type: string }) => c.object_type === "tenant"));

    await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "ann" });
    await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "bob" });
    await call(acme.adminKey, "DELETE", "/v2/facts/default/production/users/ann");
    await call(globex.adminKey, "POST", "/v2/facts/default/production/users", { key: "not-acme" });
    const page = await call(acme.adminKey, "GET", `${url}?after=${start}`);
    assert.deepEqual(
      page.json.changes.map((c: { revision: number; action: string; object: { key: string } }) => [
        c.revision - start,
        c.action,
        c.object.key,
      ]),
      [
        [1, "upsert", "ann"],
        [2, "upsert", "bob"],
        [3, "delete", "ann"],
      ],
    );
    const change = page.json.changes[0];
    assert.deepEqual(Object.keys(change).sort(), [
      "action",
      "at",
      "category",
      "object",
      "object_type",
      "revision",
      "seq",
    ]);
    assert.equal(change.category, "facts");
    assert.equal(change.object_type, "user");
    assert.equal(page.json.revision, start + 3);
    assert.equal(page.json.head, start + 3);

    // Waiting: a write during the wait ends it.
    const waiting = call(acme.adminKey, "GET", `${url}?after=${start + 3}&wait=10`);
    await new Promise((r) => setTimeout(r, 100));
    await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "cy" });
    const woken = await waiting;
    assert.equal(woken.json.changes.length, 1);
    assert.equal(woken.json.changes[0].object.key, "cy");

    // Past the head: 422; another organization's key: refused.
    const past = await call(acme.adminKey, "GET", `${url}?after=${start + 100}`);
    assert.equal(past.status, 422);
    const other = await call(globex.adminKey, "GET", `/v2/facts/default/${acme.envs.production}/changes`);
    assert.ok(other.status === 403 || other.status === 404, String(other.status));
  });

  test("SSE from an old revision through new writes: every revision once, complete and in order", async () => {
    const { acme, app, call } = env();
    await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as AddressInfo).port;
    const from = (await call(acme.adminKey, "GET", `${url}?after=0`)).json.head;
    for (let i = 0; i < 5; i++) {
      await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: `old-${i}` });
    }
    const res = await sse(port, `${url}?after=${from}`, { authorization: `Bearer ${acme.adminKey}` });
    assert.equal(res.status, 200);
    assert.match(res.type ?? "", /^text\/event-stream/);
    const writes = (async () => {
      for (let i = 0; i < 20; i++) {
        await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: `new-${i}` });
      }
    })();
    const events = await res.read((e) => e.length >= 25);
    await writes;
    assert.equal(events.length, 25);
    events.forEach((e, i) => {
      assert.equal(e.event, "revision");
      assert.equal(Number(e.id), from + 1 + i);
      assert.equal(e.data.revision, from + 1 + i);
    });
    assert.deepEqual(
      events.map((e) => e.data.changes[0].object.key),
      [
        ...Array.from({ length: 5 }, (_, i) => `old-${i}`),
        ...Array.from({ length: 20 }, (_, i) => `new-${i}`),
      ],
    );

    // Resuming with Last-Event-ID gives what follows it.
    const resumed = await sse(port, url, {
      authorization: `Bearer ${acme.adminKey}`,
      "last-event-id": String(from + 23),
    });
    const rest = await resumed.read((e) => e.length >= 2);
    assert.deepEqual(
      rest.map((e) => e.data.changes[0].object.key),
      ["new-18", "new-19"],
    );
  });

  test("a revision the retention purged: 410 with the revision to follow from; a kept one still streams", async () => {
    const { acme, app, call, store } = env();
    for (let i = 0; i < 4; i++) {
      await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: `gone-${i}` });
    }
    const head = (await call(acme.adminKey, "GET", `${url}?after=0`)).json.head;
    // Two days on, everything is older than a day's retention; the last 3 revisions stay all the same.
    const deleted = await purgeChanges(store.db, { days: 1, minRevisions: 3 }, Date.now() + 2 * 86_400_000);
    assert.ok(deleted > 0);
    assert.deepEqual(await keptRevisions(store, acme.envs.production), [head - 2, head - 1, head]);

    const gone = await call(acme.adminKey, "GET", `${url}?after=${head - 4}`);
    assert.equal(gone.status, 410, gone.body);
    assert.equal(gone.json.error_code, "REVISION_GONE");
    assert.equal(gone.json.additional_info.revision, head);
    assert.equal(gone.json.additional_info.kept_after, head - 3);
    const sseGone = await app.inject({
      method: "GET",
      url: `${url}?after=0`,
      headers: { authorization: `Bearer ${acme.adminKey}`, accept: "text/event-stream" },
    });
    assert.equal(sseGone.statusCode, 410);
    assert.equal(JSON.parse(sseGone.body).error_code, "REVISION_GONE");

    const kept = await call(acme.adminKey, "GET", `${url}?after=${head - 3}`);
    assert.equal(kept.status, 200, kept.body);
    assert.deepEqual(
      kept.json.changes.map((c: { revision: number; object: { key: string } }) => [c.revision, c.object.key]),
      [
        [head - 2, "gone-1"],
        [head - 1, "gone-2"],
        [head, "gone-3"],
      ],
    );
    if (!app.server.listening) await app.listen({ port: 0, host: "127.0.0.1" });
    const port = (app.server.address() as AddressInfo).port;
    const res = await sse(port, `${url}?after=${head - 3}`, { authorization: `Bearer ${acme.adminKey}` });
    assert.equal(res.status, 200);
    const events = await res.read((e) => e.length >= 3);
    assert.deepEqual(
      events.map((e) => Number(e.id)),
      [head - 2, head - 1, head],
    );
  });

  test("the purge keeps what is younger than the retention, and frozen organizations' feeds", async () => {
    const { acme, globex, call, store } = env();
    for (let i = 0; i < 3; i++) {
      await call(acme.adminKey, "POST", "/v2/facts/default/development/users", { key: `old-${i}` });
      await call(globex.adminKey, "POST", "/v2/facts/default/development/users", { key: `old-${i}` });
    }
    const [acmeDev, globexDev] = [acme.envs.development, globex.envs.development];
    const oldUpTo = (await keptRevisions(store, acmeDev)).at(-1)!;
    const globexBefore = await keptRevisions(store, globexDev);
    for (let i = 0; i < 3; i++) {
      await call(acme.adminKey, "POST", "/v2/facts/default/development/users", { key: `new-${i}` });
    }
    const acmeHead = (await keptRevisions(store, acmeDev)).at(-1)!;
    // The first writes were made ten days ago, in both organizations; globex is frozen while it moves.
    for (const id of [acmeDev, globexDev]) {
      await store.db
        .updateTable("changes")
        .set({ created_at: toTimestamp(new Date(Date.now() - 10 * 86_400_000)) })
        .where("environment_id", "=", id)
        .where("revision", "<=", oldUpTo)
        .execute();
    }
    await store.db
      .updateTable("organizations")
      .set({ frozen_at: now() })
      .where("id", "=", globex.id)
      .execute();
    try {
      // One row per transaction: the batches end at every row.
      assert.ok((await purgeChanges(store.db, { days: 7, minRevisions: 0 }, Date.now(), 1)) > 0);
      // Nothing older than 7 days is left: a second run deletes nothing.
      assert.equal(await purgeChanges(store.db, { days: 7, minRevisions: 0 }), 0);
    } finally {
      await store.db
        .updateTable("organizations")
        .set({ frozen_at: null })
        .where("id", "=", globex.id)
        .execute();
    }
    assert.deepEqual(
      await keptRevisions(store, acmeDev),
      [acmeHead - 2, acmeHead - 1, acmeHead],
      "the writes of the last 7 days are kept, the older ones went",
    );
    const bounds = await feedBounds(store.db, acmeDev);
    assert.equal(bounds?.keptAfter, oldUpTo);
    assert.deepEqual(
      await keptRevisions(store, globexDev),
      globexBefore,
      "a frozen organization keeps its feed",
    );
    const page = await call(acme.adminKey, "GET", `/v2/facts/default/development/changes?after=${oldUpTo}`);
    assert.deepEqual(
      page.json.changes.map((c: { object: { key: string } }) => c.object.key),
      ["new-0", "new-1", "new-2"],
    );
  });

  test("PostgreSQL: an instance that finds another purging skips its run", async (t) => {
    const { acme, call, store } = env();
    if (store.dialect !== "postgres") return t.skip("SQLite has one instance");
    await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "locked" });
    const before = await keptRevisions(store, acme.envs.production);
    const future = Date.now() + 2 * 86_400_000;
    await store.db.connection().execute(async (other) => {
      const lock = sql`hashtext('gatehouse-change-purge:' || coalesce(current_schema(), ''))`;
      await sql`select pg_advisory_lock(${lock})`.execute(other);
      try {
        assert.equal(await purgeChanges(store.db, { days: 1, minRevisions: 1 }, future), 0);
      } finally {
        await sql`select pg_advisory_unlock(${lock})`.execute(other);
      }
    });
    assert.deepEqual(await keptRevisions(store, acme.envs.production), before);
    assert.ok((await purgeChanges(store.db, { days: 1, minRevisions: 1 }, future)) > 0);
    assert.equal((await keptRevisions(store, acme.envs.production)).length, 1);
  });
});

/** The revisions whose changes the environment's feed holds, in order. */
async function keptRevisions(store: TestStore, environmentId: string): Promise<number[]> {
  const rows = await store.db
    .selectFrom("changes")
    .select("revision")
    .distinct()
    .where("environment_id", "=", environmentId)
    .orderBy("revision")
    .execute();
  return rows.map((r) => Number(r.revision));
}
