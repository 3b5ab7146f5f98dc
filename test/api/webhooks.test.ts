import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import diagnostics from "node:diagnostics_channel";
import type { Worker } from "node:worker_threads";
import { describeEachDialect } from "../helpers/app.ts";
import { startReceiver, until, type Receiver } from "../helpers/webhook-receiver.ts";
import type { TestStore } from "../helpers/stores.ts";
import type { SecretBox } from "../../src/lib/secrets.ts";
import { now } from "../../src/lib/time.ts";
import { purgeChanges } from "../../src/changes/retention.ts";
import { feedBounds } from "../../src/changes/feed.ts";
import {
  enqueueFeed,
  environmentsBehind,
  payloadOf,
  WHOLE_REVISION,
} from "../../src/modules/webhooks/webhooks.outbox.ts";

/** A subscription's deliveries as written: each one's event type, body, and whether the body is kept compressed. */
async function writtenDeliveries(store: TestStore, subscriptionId: string) {
  const rows = await store.db
    .selectFrom("webhook_deliveries")
    .select(["event_type", "payload", "payload_gzip"])
    .where("subscription_id", "=", subscriptionId)
    .execute();
  return Promise.all(
    rows.map(async (row) => ({
      type: row.event_type,
      body: JSON.parse(await payloadOf(row)),
      compressed: row.payload_gzip !== null,
    })),
  );
}

/** An organization's subscription to every event, written straight into the database (not through the API). */
async function insertSubscription(
  store: TestStore,
  box: SecretBox,
  organizationId: string,
  url: string,
  since = now(),
) {
  const id = crypto.randomUUID();
  const at = now();
  await store.db
    .insertInto("webhook_subscriptions")
    .values({
      id,
      organization_id: organizationId,
      project_id: null,
      environment_id: null,
      url,
      description: null,
      events: JSON.stringify(["*"]),
      secret_sealed: box.seal("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
      enabled: 1,
      disabled_reason: null,
      created_at: at,
      updated_at: at,
      active_since: since,
    })
    .execute();
  return id;
}

describeEachDialect("webhooks: refusing private addresses (the default)", (env) => {
  test("a loopback, private or link-local URL is refused with 422 and nothing is created", async () => {
    const { acme, call } = env();
    for (const url of [
      "http://127.0.0.1:9/hook",
      "http://localhost/hook",
      "http://10.1.2.3/hook",
      "http://192.168.0.10/hook",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]/hook",
      "http://[fe80::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "ftp://example.com/hook",
      "not a url",
    ]) {
      const res = await call(acme.adminKey, "POST", "/v2/webhooks", { url, events: ["*"] });
      assert.equal(res.status, 422, `${url}: ${res.body}`);
      assert.equal(res.json.error_code, "INVALID_INPUT");
    }
    const list = await call(acme.adminKey, "GET", "/v2/webhooks");
    assert.equal(list.json.total_count, 0);
  });

  test("at delivery, a name that now resolves to a loopback address is not connected to (DNS rebinding)", async () => {
    const { acme, box, call, store } = env();
    const receiver = await startReceiver();
    try {
      // As if `localhost` had resolved to a public address when the subscription was saved.
      const id = await insertSubscription(store, box, acme.id, `http://localhost:${receiver.port}/hook`);
      await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "rebound" });
      await until(async () => {
        const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        return (log.json.data[0]?.attempts ?? 0) >= 1;
      }, "an attempt");
      const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
      assert.match(log.json.data[0].last_error, /private address/);
      assert.equal(log.json.data[0].status, "pending");
      assert.equal(receiver.received.length + receiver.rejected.length, 0, "the receiver was reached");
    } finally {
      await receiver.stop();
    }
  });
});

describeEachDialect(
  "webhooks",
  (env) => {
    let receiver: Receiver;
    before(async () => {
      receiver = await startReceiver();
    });
    after(() => receiver.stop());

    test("create, read, list, update and delete; the secret is shown once and never again", async () => {
      const { acme, globex, call, store } = env();
      const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
        url: receiver.url,
        events: ["facts.*"],
        description: "cache invalidation",
      });
      assert.equal(created.status, 201, created.body);
      const secret: string = created.json.secret;
      const id: string = created.json.id;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      assert.equal(created.json.enabled, true);

      const got = await call(acme.adminKey, "GET", `/v2/webhooks/${id}`);
      assert.equal(got.status, 200);
      assert.equal(got.json.secret, undefined);
      assert.deepEqual(got.json.events, ["facts.*"]);
      const list = await call(acme.adminKey, "GET", "/v2/webhooks");
      assert.equal(list.json.total_count, 1);
      assert.equal(list.json.data[0].secret, undefined);
      // Neither the API log nor the table holds the secret in clear.
      await env().app.apiLog.flush();
      const logged = await store.db.selectFrom("api_log").selectAll().execute();
      assert.ok(JSON.stringify(logged).includes(id), "the creation is in the API log");
      assert.ok(!JSON.stringify(logged).includes(secret.slice(6)), "the secret is in the API log");
      const row = await store.db.selectFrom("webhook_subscriptions").selectAll().execute();
      assert.ok(!JSON.stringify(row).includes(secret.slice(6)), "the secret is stored in clear");

      // Another organization sees nothing of it.
      assert.equal((await call(globex.adminKey, "GET", `/v2/webhooks/${id}`)).status, 404);
      assert.equal((await call(globex.adminKey, "DELETE", `/v2/webhooks/${id}`)).status, 404);
      assert.equal((await call(globex.adminKey, "GET", "/v2/webhooks")).json.total_count, 0);

      const patched = await call(acme.adminKey, "PATCH", `/v2/webhooks/${id}`, { events: ["schema.*"] });
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.json.events, ["schema.*"]);
      assert.equal(patched.json.secret, undefined);

      const bad = await call(acme.adminKey, "POST", "/v2/webhooks", { url: receiver.url, events: ["no"] });
      assert.equal(bad.status, 422);
      const half = await call(acme.adminKey, "POST", "/v2/webhooks", {
        url: receiver.url,
        events: ["*"],
        project_id: "default",
      });
      assert.equal(half.status, 422);

      assert.equal((await call(acme.adminKey, "DELETE", `/v2/webhooks/${id}`)).status, 204);
      assert.equal((await call(acme.adminKey, "GET", `/v2/webhooks/${id}`)).status, 404);
    });

    test("a fact write is delivered signed, once, only to the subscriptions that see it", async () => {
      const { acme, globex, call } = env();
      const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
        url: receiver.url,
        events: ["facts.user"],
        project_id: "default",
        environment_id: "production",
      });
      assert.equal(created.status, 201, created.body);
      receiver.setSecret(created.json.secret);
      const id: string = created.json.id;
      const start = receiver.received.length;

      await call(acme.adminKey, "POST", "/v2/facts/default/development/users", { key: "dev-only" });
      await call(globex.adminKey, "POST", "/v2/facts/default/production/users", { key: "other-org" });
      await call(acme.adminKey, "POST", "/v2/schema/default/production/resources", {
        key: "doc",
        name: "Doc",
        actions: { read: {} },
      });
      const user = await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "ann" });
      assert.equal(user.status, 201, user.body);

      await until(() => receiver.received.length > start, "the delivery");
      const got = receiver.received.slice(start);
      assert.equal(got.length, 1, JSON.stringify(got));
      const event = got[0]!.payload;
      assert.equal(event.type, "facts.user");
      assert.equal(event.data.organization_id, acme.id);
      assert.equal(event.data.environment_id, acme.envs.production);
      assert.equal(event.data.changes.length, 1);
      assert.equal(event.data.changes[0].object_type, "user");
      assert.equal(event.data.changes[0].action, "upsert");
      assert.equal(event.data.changes[0].object.key, "ann");
      assert.deepEqual(receiver.rejected, []);

      await until(async () => {
        const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        return log.json.data[0]?.status === "delivered";
      }, "the delivery log");
      const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
      assert.equal(log.json.total_count, 1);
      const delivery = log.json.data[0];
      assert.equal(delivery.id, got[0]!.id);
      assert.equal(delivery.last_status_code, 204);
      assert.equal(delivery.attempts, 1);
      assert.equal(typeof delivery.last_latency_ms, "number");

      // Redelivery sends the same webhook-id again.
      const again = await call(
        acme.adminKey,
        "POST",
        `/v2/webhooks/${id}/deliveries/${delivery.id}/redeliver`,
      );
      assert.equal(again.status, 200, again.body);
      await until(() => receiver.received.length > start + 1, "the redelivery");
      assert.equal(receiver.received.at(-1)!.id, delivery.id);
      const one = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries/${delivery.id}`);
      assert.equal(one.json.payload.type, "facts.user");
      assert.equal((await call(globex.adminKey, "GET", `/v2/webhooks/${id}/deliveries`)).status, 404);
      await call(acme.adminKey, "DELETE", `/v2/webhooks/${id}`);
    });

    test("API keys, invites, an environment copy and its task: one event each, without secrets", async () => {
      const { acme, app, call } = env();
      const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
        url: receiver.url,
        events: ["api_key.*", "invite.*", "environment.copied", "task.finished"],
      });
      receiver.setSecret(created.json.secret);
      const start = receiver.received.length;
      const key = await call(acme.adminKey, "POST", "/v2/api-key", {
        object_type: "org",
        access_level: "read",
      });
      const rotated = await call(acme.adminKey, "POST", `/v2/api-key/${key.json.id}/rotate-secret`);
      await call(acme.adminKey, "DELETE", `/v2/api-key/${key.json.id}`);
      const invited = await call(acme.adminKey, "POST", `/v2/orgs/${acme.id}/invites`, [
        { email: "x@acme.test" },
      ]);
      assert.equal(invited.status, 200, invited.body);
      await call(acme.adminKey, "DELETE", `/v2/orgs/${acme.id}/invites/${invited.json.success[0].id}`);
      app.taskRunner.start();
      const copy = await call(
        acme.adminKey,
        "POST",
        `/v2/projects/${acme.projectId}/envs/${acme.envs.production}/copy/async`,
        { target_env: { new: { key: "copied", name: "Copied" } } },
      );
      assert.equal(copy.status, 202, copy.body);
      const expected = [
        "api_key.created",
        "api_key.rotated",
        "api_key.deleted",
        "invite.created",
        "invite.cancelled",
        "environment.copied",
        "task.finished",
      ];
      await until(() => receiver.received.length >= start + expected.length, "the events");
      const got = receiver.received.slice(start);
      assert.deepEqual(got.map((r) => r.type).sort(), [...expected].sort());
      const text = JSON.stringify(got);
      for (const secret of [key.json.secret, rotated.json.secret, invited.json.success[0].code]) {
        if (secret) assert.ok(!text.includes(secret), "an event carries a secret");
      }
      const keyEvent = got.find((r) => r.type === "api_key.created")!.payload;
      assert.equal(keyEvent.data.api_key.id, key.json.id);
      const task = got.find((r) => r.type === "task.finished")!.payload;
      assert.equal(task.data.task.id, copy.json.task_id);
      assert.equal(task.data.task.status, "success");
      await call(acme.adminKey, "DELETE", `/v2/webhooks/${created.json.id}`);
    });

    test("a receiver that keeps failing: retried with backoff, then the subscription is disabled and says why", async () => {
      const { acme, call } = env();
      const failing = await startReceiver();
      failing.setMode("fail");
      try {
        const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
          url: failing.url,
          events: ["*"],
        });
        const id: string = created.json.id;
        await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "bob" });
        await until(
          async () => (await call(acme.adminKey, "GET", `/v2/webhooks/${id}`)).json.enabled === false,
          "the subscription to be disabled",
        );
        const hook = await call(acme.adminKey, "GET", `/v2/webhooks/${id}`);
        assert.match(hook.json.disabled_reason, /HTTP 500/);
        const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        const delivery = log.json.data[0];
        assert.equal(delivery.status, "failed");
        assert.ok(delivery.attempts >= 2, `attempts: ${delivery.attempts}`);
        assert.equal(delivery.last_status_code, 500);
        assert.equal(delivery.last_response, "receiver is failing on purpose");

        // Disabled: new writes queue nothing for it.
        await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "carl" });
        const after = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        assert.equal(after.json.total_count, 1);
        await call(acme.adminKey, "DELETE", `/v2/webhooks/${id}`);
      } finally {
        await failing.stop();
      }
    });

    test("a receiver that hangs is cut at the timeout", async () => {
      const { acme, call } = env();
      const hanging = await startReceiver();
      hanging.setMode("hang");
      try {
        const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
          url: hanging.url,
          events: ["*"],
        });
        const id: string = created.json.id;
        await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "dora" });
        await until(async () => {
          const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
          return (log.json.data[0]?.attempts ?? 0) >= 1;
        }, "an attempt to end");
        const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        assert.match(log.json.data[0].last_error, /no answer within 300 ms/);
        await call(acme.adminKey, "DELETE", `/v2/webhooks/${id}`);
      } finally {
        await hanging.stop();
      }
    });
  },
  {
    webhookAllowPrivateUrls: "true",
    webhookTimeoutMs: 300,
    webhookRetryBaseMs: 100,
    webhookRetrySeconds: 1,
  },
);

describeEachDialect(
  "webhooks: the sending thread",
  (env) => {
    test("a sending thread that dies mid-round: its deliveries are retried by a new one and delivered", async () => {
      const { acme, call } = env();
      const receiver = await startReceiver();
      // Every worker thread this process starts (node:diagnostics_channel announces them).
      const started: Worker[] = [];
      const onWorker = (message: unknown) => started.push((message as { worker: Worker }).worker);
      diagnostics.subscribe("worker_threads", onWorker);
      try {
        receiver.setMode("hang");
        const created = await call(acme.adminKey, "POST", "/v2/webhooks", {
          url: receiver.url,
          events: ["facts.*"],
        });
        assert.equal(created.status, 201, created.body);
        receiver.setSecret(created.json.secret);
        const id: string = created.json.id;
        assert.equal(started.length, 0, "a thread started before there was something to send");

        await call(acme.adminKey, "POST", "/v2/facts/default/production/users", { key: "eve" });
        await until(() => receiver.held.length === 1, "the delivery to reach the receiver");
        assert.equal(started.length, 1, "one sending thread");
        receiver.setMode("ok");
        await started[0]!.terminate();

        await until(() => receiver.received.length === 1, "the retry");
        assert.equal(receiver.received[0]!.id, receiver.held[0], "the same delivery");
        assert.equal(started.length, 2, "a new thread sent the retry");
        await until(async () => {
          const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
          return log.json.data[0]?.status === "delivered";
        }, "the delivery log");
        const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries`);
        assert.equal(log.json.data[0].attempts, 2);
        assert.equal(log.json.data[0].last_status_code, 204);
        assert.deepEqual(receiver.rejected, []);
      } finally {
        diagnostics.unsubscribe("worker_threads", onWorker);
        await receiver.stop();
      }
    });
  },
  // A held delivery stays in flight until the thread dies; the retry follows at once.
  {
    webhookAllowPrivateUrls: "true",
    webhookTimeoutMs: 60_000,
    webhookRetryBaseMs: 100,
    webhookRetrySeconds: 3600,
  },
);

describeEachDialect(
  "webhooks: the subscriptions a write sees",
  (env) => {
    test("each write is announced to the subscriptions as they are when it is answered, however they changed", async () => {
      const { acme, box, call, store } = env();
      // Nothing listens here, and a failed attempt waits a minute: the deliveries stay as written.
      const url = "http://127.0.0.1:9/hook";
      let n = 0;
      const write = async () => {
        const res = await call(acme.adminKey, "POST", "/v2/facts/default/development/users", {
          key: `w${n++}`,
        });
        assert.equal(res.status, 201, res.body);
        return Number(res.headers["x-gatehouse-revision"]);
      };
      /** The revisions of the changes a subscription got deliveries of (facts.user events, changes in order). */
      const revisionsOf = async (id: string) =>
        (await writtenDeliveries(store, id))
          .flatMap(({ type, body }) => {
            assert.equal(type, "facts.user");
            const revisions = body.data.changes.map((c: { revision: number }) => c.revision);
            assert.equal(revisions[0], body.data.first_revision);
            assert.equal(revisions.at(-1), body.data.revision);
            return revisions as number[];
          })
          .sort((x, y) => x - y);
      /** revisionsOf, once the sender (which reads the feed after the commit) has written `expected`'s deliveries. */
      const announced = async (id: string, expected: number[]) => {
        await until(
          async () => {
            const got = await revisionsOf(id);
            return expected.every((r) => got.includes(r));
          },
          `the deliveries of revisions ${expected.join(", ")}`,
        );
        return revisionsOf(id);
      };
      const subscribe = async (events: string[], scoped: boolean) => {
        const res = await call(acme.adminKey, "POST", "/v2/webhooks", {
          url,
          events,
          ...(scoped && { project_id: "default", environment_id: "development" }),
        });
        assert.equal(res.status, 201, res.body);
        return res.json.id as string;
      };
      const patch = async (id: string, body: object) =>
        assert.equal((await call(acme.adminKey, "PATCH", `/v2/webhooks/${id}`, body)).status, 200);

      await write(); // before A: not announced to it
      const a = await subscribe(["facts.user"], true);
      const r1 = await write();
      // A write and the PATCH right after it: the write is announced as the subscription was.
      const r2 = await write();
      await patch(a, { events: ["schema.*"] });
      assert.deepEqual(await announced(a, [r1, r2]), [r1, r2]);

      // A no longer wants users; B (the whole organization) does. Each pass over the feed reads every subscription
      // of the environment, so once B has r3, A has been passed over too.
      const b = await subscribe(["facts.*"], false);
      const r3 = await write();
      assert.deepEqual(await announced(b, [r3]), [r3]);
      assert.deepEqual(await revisionsOf(a), [r1, r2]);

      // B is disabled, A wants users again.
      await patch(b, { enabled: false });
      await patch(a, { events: ["facts.user"] });
      const r4 = await write();
      assert.deepEqual(await announced(a, [r4]), [r1, r2, r4]);
      assert.deepEqual(await revisionsOf(b), [r3]);

      // Enabled again, B sees the writes from then on, not those made while it was off.
      await patch(b, { enabled: true });
      const r4b = await write();
      assert.deepEqual(await announced(b, [r4b]), [r3, r4b]);

      // B goes, and C appears without this process hearing of it (another instance, say).
      assert.equal((await call(acme.adminKey, "DELETE", `/v2/webhooks/${b}`)).status, 204);
      const c = await insertSubscription(store, box, acme.id, url);
      const r5 = await write();
      assert.deepEqual(await announced(c, [r5]), [r5]);
      assert.deepEqual(await announced(a, [r5]), [r1, r2, r4, r4b, r5]);

      assert.equal((await call(acme.adminKey, "DELETE", `/v2/webhooks/${a}`)).status, 204);
      const r6 = await write();
      assert.deepEqual(await announced(c, [r6]), [r5, r6]);
      assert.equal((await call(acme.adminKey, "DELETE", `/v2/webhooks/${c}`)).status, 204);
    });
  },
  { webhookAllowPrivateUrls: "true", webhookRetryBaseMs: 60_000, webhookRetrySeconds: 3600 },
);

describeEachDialect(
  "webhooks: the change feed as the outbox",
  (env) => {
    test("the deliveries carry every change once, as the change stream shows them, in bounded passes", async () => {
      const { acme, box, call, store } = env();
      const F = "/v2/facts/default/production";
      const start = Number((await call(acme.adminKey, "GET", `${F}/changes?after=0`)).json.head);
      const since = now();
      // Ten batch rows of the feed (each bulk write is 600 users and 600 assignments: two rows of one revision), so
      // the sender reads them in several passes; single changes and a schema change around them.
      assert.equal((await call(acme.adminKey, "POST", `${F}/users`, { key: "first" })).status, 201);
      const role = await call(acme.adminKey, "POST", "/v2/schema/default/production/roles", {
        key: "viewer",
        name: "Viewer",
      });
      assert.equal(role.status, 200, role.body);
      for (let b = 0; b < 5; b++) {
        const operations = Array.from({ length: 600 }, (_, i) => ({
          key: `b${b}-${i}`,
          role_assignments: [{ role: "viewer", tenant: "default" }],
        }));
        const res = await call(acme.adminKey, "POST", `${F}/bulk/users`, { operations });
        assert.equal(res.status, 200, res.body);
      }
      const resource = await call(acme.adminKey, "POST", "/v2/schema/default/production/resources", {
        key: "outbox-doc",
        name: "Doc",
        actions: { read: {} },
      });
      assert.ok(resource.status < 300, resource.body);
      assert.equal((await call(acme.adminKey, "DELETE", `${F}/users/first`)).status, 204);

      // What the change stream shows after the subscription's start.
      const expected: { revision: number; seq: number }[] = [];
      for (let after = start; ;) {
        const page = await call(acme.adminKey, "GET", `${F}/changes?after=${after}`);
        expected.push(...page.json.changes);
        after = page.json.revision;
        if (after >= page.json.head) break;
      }
      assert.equal(expected.length, 1 + 1 + 5 * 1200 + 1 + 1);

      // A subscription from before those writes, that this process has not heard of (the sender has passed over
      // the writes, with no subscription then): passing over the feed until it is covered takes bounded passes.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const id = await insertSubscription(store, box, acme.id, "http://127.0.0.1:9/hook", since);
      const passes: string[] = [];
      for (let pass = ""; pass !== "done"; passes.push(pass)) {
        const lease = { owner: "the test", expiresAt: now() };
        pass = (await enqueueFeed(store.db, acme.envs.production, lease)).result;
      }
      assert.deepEqual(passes, ["more", "done"]);

      const deliveries = await writtenDeliveries(store, id);
      // A bulk write's events are large: their bodies are kept compressed; a single change's is not.
      assert.ok(deliveries.some((d) => d.compressed && d.body.data.changes.length === 1000));
      assert.ok(deliveries.some((d) => !d.compressed && d.body.data.changes.length === 1));
      // The delivery log shows a compressed one's event as sent.
      const log = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries?per_page=100`);
      const big = log.json.data.find((d: { event_type: string }) => d.event_type === "facts.role_assignment");
      const one = await call(acme.adminKey, "GET", `/v2/webhooks/${id}/deliveries/${big.id}`);
      assert.equal(one.status, 200, one.body);
      assert.ok(one.json.payload.data.changes.length > 100);
      assert.equal(one.json.payload.type, "facts.role_assignment");
      const changes = [];
      for (const { type, body } of deliveries) {
        assert.equal(body.type, type);
        assert.equal(body.data.environment_id, acme.envs.production);
        assert.ok(body.data.changes.length >= 1 && body.data.changes.length <= 1000);
        assert.equal(body.data.first_revision, body.data.changes[0].revision);
        assert.equal(body.data.revision, body.data.changes.at(-1).revision);
        for (const change of body.data.changes) {
          assert.equal(`${change.category}.${change.object_type}`, type);
          changes.push(change);
        }
      }
      const order = (x: { revision: number; seq: number }, y: { revision: number; seq: number }) =>
        x.revision - y.revision || x.seq - y.seq;
      // Every change once (no position twice), each as the stream shows it.
      assert.deepEqual(changes.sort(order), expected.sort(order));
      assert.ok(deliveries.some((d) => d.type === "schema.resource"));

      // The subscription's cursor stands at the end; set back, the sweep finds the environment behind.
      const head = expected.at(-1)!.revision;
      const cursor = () =>
        store.db
          .selectFrom("webhook_cursors")
          .select(["revision", "seq"])
          .where("subscription_id", "=", id)
          .executeTakeFirstOrThrow();
      assert.deepEqual(await cursor(), { revision: head, seq: WHOLE_REVISION });
      assert.ok(!(await environmentsBehind(store.db)).includes(acme.envs.production));
      await store.db
        .updateTable("webhook_cursors")
        .set({ revision: head - 2 })
        .where("subscription_id", "=", id)
        .execute();
      assert.ok((await environmentsBehind(store.db)).includes(acme.envs.production));

      // The retention purge keeps what an enabled subscription has not read, whatever its age.
      await purgeChanges(store.db, { days: 1, minRevisions: 0 }, Date.now() + 2 * 86_400_000);
      assert.equal((await feedBounds(store.db, acme.envs.production))!.keptAfter, head - 3);
      // Disabled, it holds nothing back.
      await call(acme.adminKey, "PATCH", `/v2/webhooks/${id}`, { enabled: false });
      await purgeChanges(store.db, { days: 1, minRevisions: 0 }, Date.now() + 2 * 86_400_000);
      assert.equal((await feedBounds(store.db, acme.envs.production))!.keptAfter, head);
    });
  },
  { webhookAllowPrivateUrls: "true", webhookRetryBaseMs: 60_000, webhookRetrySeconds: 3600 },
);
