import { test, before } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance, InjectOptions } from "fastify";
import { Redis } from "ioredis";
import { buildTestApp, describeEachDialect, type TestEnv } from "../helpers/app.ts";

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

    test("a limit changed through the API applies at once; invalid limits are 422 and change nothing", async () => {
      const { acme, call } = env();
      const key = await newKey(env(), "limit-change");
      nextWindow();
      const patch = (settings: unknown) => call(acme.adminKey, "PATCH", `/v2/orgs/${acme.id}`, { settings });
      assert.equal((await patch({ rate_limit_per_minute: 8, theme: "dark" })).status, 200);
      const first = await call(key.secret, "GET", "/v2/projects");
      assert.equal(first.headers["ratelimit-limit"], "8");
      assert.equal(first.headers["ratelimit-remaining"], "7");

      nextWindow();
      for (const bad of [0, -1, 1.5, "10", null, true]) {
        const res = await patch({ rate_limit_per_minute: bad });
        assert.equal(res.status, 422, JSON.stringify(bad));
        assert.equal(res.json.error_code, "INVALID_INPUT");
      }
      const newOrg = { key: "bad-limit", name: "Bad limit", settings: { rate_limit_per_minute: 0 } };
      assert.equal((await call(acme.adminKey, "POST", "/v2/orgs", newOrg)).status, 422);
      const org = await call(acme.adminKey, "GET", `/v2/orgs/${acme.id}`);
      assert.deepEqual(org.json.settings, { rate_limit_per_minute: 8, theme: "dark" });

      // Lowered below what the key has used in this window: the next call is already over.
      nextWindow();
      for (let i = 0; i < 3; i++) assert.equal((await call(key.secret, "GET", "/v2/projects")).status, 200);
      assert.equal((await patch({ rate_limit_per_minute: 2 })).status, 200);
      const over = await call(key.secret, "GET", "/v2/projects");
      assert.equal(over.status, 429);
      assert.equal(over.headers["ratelimit-limit"], "2");

      // Removing the setting restores the server's default.
      nextWindow();
      assert.equal((await patch({})).status, 200);
      assert.equal((await call(key.secret, "GET", "/v2/projects")).headers["ratelimit-limit"], String(LIMIT));
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
