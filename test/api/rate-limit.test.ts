import { test, before } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance, InjectOptions } from "fastify";
import { Redis } from "ioredis";
import { buildTestApp, describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { addMember, asMember, login } from "../helpers/members.ts";
import { orgsCommand } from "../../src/cli/orgs.ts";
import { ConfigError } from "../../src/config.ts";
import { openStore } from "../../src/db/store.ts";

const LIMIT = 5;
const REDIS_URL = process.env["TEST_REDIS_URL"] ?? "redis://127.0.0.1:6379";

async function redisReachable(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  try {
    await redis.connect();
    return (await redis.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}
const redisUp = await redisReachable();
if (!redisUp && process.env["CI"] === "true") throw new Error(`Redis is not reachable at ${REDIS_URL}`);
const redisSkip = redisUp ? false : `Redis not reachable at ${REDIS_URL}`;

/** The rate limiter's clock: tests move it instead of waiting for windows to pass. */
let now = Date.parse("2030-01-01T00:00:00Z");
const clock = () => now;
/** Starts a fresh one-minute window and stands `offsetSeconds` into it. */
const nextWindow = (offsetSeconds = 10) => {
  now = (Math.floor(now / 60_000) + 1) * 60_000 + offsetSeconds * 1000;
};

async function callOn(app: FastifyInstance, key: string, method: InjectOptions["method"], url: string) {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` } });
  return { status: res.statusCode, headers: res.headers, json: res.body ? res.json() : undefined };
}

describeEachDialect(
  "rate limits",
  (env) => {
    const newKey = async (e: TestEnv, name: string) => {
      nextWindow();
      const res = await e.call(e.acme.adminKey, "POST", "/v2/api-key", { object_type: "org", name });
      assert.equal(res.status, 200);
      return { id: res.json.id as string, secret: res.json.secret as string };
    };

    before(() => nextWindow());

    test("429 after the limit with the error body and headers; the rejected write has no effect; retry after Retry-After succeeds", async () => {
      const { acme, globex, call } = env();
      nextWindow(10);
      for (let i = 1; i <= LIMIT; i++) {
        const res = await call(acme.adminKey, "GET", i === 3 ? "/v2/projects/missing" : "/v2/projects");
        assert.equal(res.status, i === 3 ? 404 : 200);
        assert.equal(res.headers["ratelimit-limit"], String(LIMIT));
        assert.equal(
          res.headers["ratelimit-remaining"],
          String(LIMIT - i),
          "every response carries the budget",
        );
        assert.equal(res.headers["ratelimit-reset"], "50");
        assert.equal(res.headers["retry-after"], undefined);
      }
      const rejected = await call(acme.adminKey, "POST", "/v2/projects", { key: "limited", name: "Limited" });
      assert.equal(rejected.status, 429);
      assert.equal(rejected.json.error_code, "TOO_MANY_REQUESTS");
      assert.ok(
        rejected.json.id && rejected.json.title && rejected.json.message && rejected.json.support_link,
      );
      assert.equal(rejected.headers["retry-after"], "50");
      assert.equal(rejected.headers["ratelimit-remaining"], "0");
      assert.equal(rejected.headers["ratelimit-limit"], String(LIMIT));
      // A malformed body is not even read: the limit comes first.
      assert.equal((await call(acme.adminKey, "POST", "/v2/projects", { key: 42 })).status, 429);
      // Another organization's key has its own budget.
      assert.equal((await call(globex.adminKey, "GET", "/v2/projects")).status, 200);
      // Unauthenticated calls carry no budget.
      const anonymous = await call(null, "GET", "/v2/projects");
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.headers["ratelimit-limit"], undefined);

      now += Number(rejected.headers["retry-after"]) * 1000;
      const after = await call(acme.adminKey, "GET", "/v2/projects/limited");
      assert.equal(after.status, 404, "the rejected create did not happen");
      assert.equal(after.headers["ratelimit-remaining"], String(LIMIT - 1));
      const retried = await call(acme.adminKey, "POST", "/v2/projects", { key: "limited", name: "Limited" });
      assert.equal(retried.status, 200, "the same request succeeds after Retry-After");

      // 429s are recorded in the API log, without a body (it was never read).
      await env().app.apiLog.flush();
      const rows = await env()
        .store.db.selectFrom("api_log")
        .selectAll()
        .where("status", "=", 429)
        .where("organization_id", "=", acme.id)
        .execute();
      assert.equal(rows.length, 2);
      assert.deepEqual(
        rows.map((r) => [r.method, r.path, r.request_body]),
        [
          ["POST", "/v2/projects", null],
          ["POST", "/v2/projects", null],
        ],
      );
    });

    test("a limit changed through the API applies at once; limits below 60 or invalid are 422 and change nothing", async () => {
      const { acme, call } = env();
      const key = await newKey(env(), "limit-change");
      nextWindow();
      const patch = (settings: unknown) => call(acme.adminKey, "PATCH", `/v2/orgs/${acme.id}`, { settings });
      assert.equal((await patch({ rate_limit_per_minute: 70, theme: "dark" })).status, 200);
      const first = await call(key.secret, "GET", "/v2/projects");
      assert.equal(first.headers["ratelimit-limit"], "70");
      assert.equal(first.headers["ratelimit-remaining"], "69");

      nextWindow();
      // (null is the same as leaving the field out: see the wire tests)
      for (const bad of [-5, 0, 1, 59, 1_000_000_001, 1.5, "100", true]) {
        const res = await patch({ rate_limit_per_minute: bad });
        assert.equal(res.status, 422, JSON.stringify(bad));
        assert.equal(res.json.error_code, "INVALID_INPUT");
      }
      const tooLow = await patch({ rate_limit_per_minute: -5 });
      assert.match(tooLow.json.message, /rate_limit_per_minute: must be >= 60/);
      const newOrg = { key: "bad-limit", name: "Bad limit", settings: { rate_limit_per_minute: 59 } };
      assert.equal((await call(acme.adminKey, "POST", "/v2/orgs", newOrg)).status, 422);
      const org = await call(acme.adminKey, "GET", `/v2/orgs/${acme.id}`);
      assert.deepEqual(org.json.settings, { rate_limit_per_minute: 70, theme: "dark" });

      // Lowered below what the key has used in this window: the next call is already over.
      nextWindow();
      for (let i = 0; i < 65; i++) assert.equal((await call(key.secret, "GET", "/v2/projects")).status, 200);
      assert.equal((await patch({ rate_limit_per_minute: 60 })).status, 200);
      const over = await call(key.secret, "GET", "/v2/projects");
      assert.equal(over.status, 429);
      assert.equal(over.headers["ratelimit-limit"], "60");

      // Removing the setting restores the server's default.
      nextWindow();
      assert.equal((await patch({})).status, 200);
      assert.equal((await call(key.secret, "GET", "/v2/projects")).headers["ratelimit-limit"], String(LIMIT));
    });

    test("members' sessions count apart from the keys, with at least the server's limit: a member can raise a limit that stops the keys", async () => {
      const { store, box, acme } = env();
      const key = await newKey(env(), "session-apart");
      // The server's own default here is 1000; the organization's 60 then stops its keys, not its members.
      const app = await buildTestApp(store, box, { rateLimitPerMinute: 1000, clock });
      try {
        await addMember(store, "limits@example.test", [{ organizationId: acme.id }]);
        const session = await login(app, "limits@example.test");
        nextWindow();
        assert.equal(
          (
            await asMember(app, session, "PATCH", `/v2/orgs/${acme.id}`, {
              settings: { rate_limit_per_minute: 60 },
            })
          ).status,
          200,
        );
        for (let i = 0; i < 60; i++)
          assert.equal((await callOn(app, key.secret, "GET", "/v2/projects")).status, 200);
        const stopped = await callOn(app, key.secret, "GET", "/v2/projects");
        assert.equal(stopped.status, 429);
        assert.match(stopped.json.message, /this API key is over its limit of 60/);

        const read = await asMember(app, session, "GET", `/v2/orgs/${acme.id}`);
        assert.equal(read.status, 200, "the member's session still works");
        assert.equal(read.headers["ratelimit-limit"], "1000");
        assert.equal(
          read.headers["ratelimit-remaining"],
          "998",
          "counted apart from the key (the PATCH and this)",
        );
        const raised = await asMember(app, session, "PATCH", `/v2/orgs/${acme.id}`, {
          settings: { rate_limit_per_minute: 5000 },
        });
        assert.equal(raised.status, 200);
        const again = await callOn(app, key.secret, "GET", "/v2/projects");
        assert.equal(again.status, 200, "the keys work again at once");
        assert.equal(again.headers["ratelimit-limit"], "5000");

        // A limit stored below the floor (before there was one) counts as the floor.
        nextWindow();
        await store.db
          .updateTable("organizations")
          .set({ settings: JSON.stringify({ rate_limit_per_minute: 1 }) })
          .where("id", "=", acme.id)
          .execute();
        app.rateLimits.forget(acme.id);
        const floored = await callOn(app, key.secret, "GET", "/v2/projects");
        assert.equal(floored.status, 200);
        assert.equal(floored.headers["ratelimit-limit"], "60");
        await store.db
          .updateTable("organizations")
          .set({ settings: JSON.stringify({}) })
          .where("id", "=", acme.id)
          .execute();
      } finally {
        await app.close();
      }
    });

    test("gatehouse orgs set-rate-limit sets or removes an organization's limit on the database; below 60 it is refused", async () => {
      const { store, box, acme, globex, app } = env();
      const key = await newKey(env(), "cli-limit");
      const printed: string[] = [];
      const run = (...args: string[]) =>
        orgsCommand(
          ["set-rate-limit", ...args],
          {
            openStore: () => openStore(store.location),
            loadSecretBox: () => box,
            print: (line) => printed.push(line),
          },
          {},
        );
      const stored = async (id: string) =>
        (
          await store.db
            .selectFrom("organizations")
            .select("settings")
            .where("id", "=", id)
            .executeTakeFirstOrThrow()
        ).settings;
      const [acmeBefore, globexBefore] = [await stored(acme.id), await stored(globex.id)];
      for (const bad of ["1", "-5", "59", "1000000001", "ten"]) {
        await assert.rejects(run("--org", "acme", "--limit", bad), (e: Error) => {
          assert.ok(e instanceof ConfigError, bad);
          assert.match(e.message, /--limit must be a whole number of requests per minute from 60/);
          return true;
        });
      }
      await assert.rejects(run("--org", "nope", "--limit", "100"), /no organization 'nope'/);
      assert.equal(await stored(acme.id), acmeBefore, "the refused calls changed nothing");

      assert.equal(await run("--org", acme.id, "--limit", "120"), 0);
      assert.match(printed.join("\n"), /Organization 'acme': 120 requests per minute per API key/);
      app.rateLimits.forget(acme.id);
      nextWindow();
      assert.equal((await callOn(app, key.secret, "GET", "/v2/projects")).headers["ratelimit-limit"], "120");
      assert.equal(await stored(globex.id), globexBefore, "another organization is left alone");

      assert.equal(await run("--org", "acme", "--limit", "default"), 0);
      assert.deepEqual(JSON.parse((await stored(acme.id)) ?? "{}"), {});
      app.rateLimits.forget(acme.id);
      assert.equal(
        (await callOn(app, key.secret, "GET", "/v2/projects")).headers["ratelimit-limit"],
        String(LIMIT),
      );
    });

    test(
      "two instances sharing Redis enforce one limit; without Redis each counts alone",
      { skip: redisSkip },
      async () => {
        const { store, box } = env();
        const key = await newKey(env(), "shared");
        const shared = [
          await buildTestApp(store, box, { rateLimitPerMinute: LIMIT, redisUrl: REDIS_URL, clock }),
          await buildTestApp(store, box, { rateLimitPerMinute: LIMIT, redisUrl: REDIS_URL, clock }),
        ];
        // The suite's own app counts in memory, like the second one.
        const alone = [env().app, await buildTestApp(store, box, { rateLimitPerMinute: LIMIT, clock })];
        try {
          nextWindow();
          const statuses: number[] = [];
          for (let i = 0; i < LIMIT + 2; i++) {
            statuses.push((await callOn(shared[i % 2]!, key.secret, "GET", "/v2/projects")).status);
          }
          assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
          const remaining = await callOn(shared[1]!, key.secret, "GET", "/v2/api-key/scope");
          assert.equal(remaining.headers["ratelimit-remaining"], "0");

          nextWindow();
          const separate: number[] = [];
          for (let i = 0; i < LIMIT + 2; i++) {
            separate.push((await callOn(alone[i % 2]!, key.secret, "GET", "/v2/projects")).status);
          }
          assert.deepEqual(
            separate,
            [200, 200, 200, 200, 200, 200, 200],
            "in memory, each instance counts alone",
          );
        } finally {
          for (const app of [...shared, alone[1]!]) await app.close();
        }
      },
    );

    test("when Redis is unreachable, calls still succeed and the limit holds in each instance's memory", async () => {
      const { store, box } = env();
      const key = await newKey(env(), "no-redis");
      const app = await buildTestApp(store, box, {
        rateLimitPerMinute: LIMIT,
        redisUrl: "redis://127.0.0.1:1",
        clock,
      });
      try {
        nextWindow();
        const statuses: number[] = [];
        for (let i = 0; i < LIMIT + 1; i++)
          statuses.push((await callOn(app, key.secret, "GET", "/v2/projects")).status);
        assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
      } finally {
        await app.close();
      }
    });
  },
  { rateLimitPerMinute: LIMIT, clock },
);
