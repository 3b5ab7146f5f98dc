/*
 * Why not @fastify/rate-limit (measured against 10.3.0, its README, index.js and store/RedisStore.js): it serves a
 * limit per organization that changes at run time (`max` may be an async function of the request), counters shared
 * across instances (its Redis store), our header names (`enableDraftSpec`) and our 429 body (`errorResponseBuilder`
 * may return an AppError, which it throws). It does not serve two things this plugin must do:
 * - Redis away: its choices are to fail the request with the store's error (500) or, with `skipOnError`, to stop
 *   limiting altogether. Here each instance goes on counting in memory (a degraded limit, neither none nor errors)
 *   and says so in its log once a minute (test/api/rate-limit.test.ts).
 * - Login failures (`rateLimits.failures`) read a count without adding to it and use windows of their own; its
 *   store only increments and is not exposed, so the counter, the Redis client and the Lua below would stay anyway.
 * Its windows also start at a key's first hit instead of on the clock's minute, and it reads Date.now() where the
 * tests inject a clock. Taking it would add a dependency and replace only the onRequest hook (about 40 lines).
 */
import { once } from "node:events";
import fp from "fastify-plugin";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { AppError } from "../lib/errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    rateLimit: RateLimitState | null;
  }
  interface FastifyInstance {
    rateLimits: {
      /** Drops the cached limit of an organization (its settings changed), so the next request reads it again. */
      forget(organizationId: string): void;
      /** Failed attempts (logins) per subject in fixed windows, in the same store as the request counters. */
      failures: FailureLimiter;
    };
  }
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** seconds until the window resets */
  reset: number;
  limited: boolean;
}

export interface RateLimitOptions {
  /** GATEHOUSE_RATE_LIMIT_PER_MINUTE: the limit of keys whose organization sets none */
  defaultLimit: number;
  /** the organization's own limit (settings.rate_limit_per_minute), if it has one */
  limitOf(organizationId: string): Promise<number | undefined>;
  /** REDIS_URL: counters shared by every instance; in memory without it */
  redisUrl?: string | undefined;
  /** milliseconds since the epoch; injectable so tests need not wait a minute */
  clock?: () => number;
}

const WINDOW_MS = 60_000;
/** How long an instance trusts its copy of an organization's limit (changes made on this instance: at once). */
const LIMIT_CACHE_MS = 5_000;
const REDIS_CONNECT_WAIT_MS = 2_000;
const REDIS_COMMAND_TIMEOUT_MS = 250;

export interface FailureLimiter {
  /** Seconds until `subject` may try again (0: it may now), given at most `limit` failures per window. */
  retryAfter(subject: string, limit: number, windowMs: number): Promise<number>;
  /** Counts one failure of `subject` in the current window. */
  record(subject: string, windowMs: number): Promise<void>;
}

/** Counts hits of one key in one window; returns the count including this hit. */
interface Counter {
  hit(keyId: string, windowStart: number, windowMs?: number): Promise<number>;
  /** The count so far, without a hit. */
  count(keyId: string, windowStart: number): Promise<number>;
  close(): Promise<void>;
}

function memoryCounter(): Counter & { sweep(at: number): void } {
  const counts = new Map<string, { windowStart: number; count: number; until: number }>();
  return {
    async hit(keyId, windowStart, windowMs = WINDOW_MS) {
      const entry = counts.get(keyId);
      if (entry && entry.windowStart === windowStart) return ++entry.count;
      counts.set(keyId, { windowStart, count: 1, until: windowStart + windowMs });
      return 1;
    },
    async count(keyId, windowStart) {
      const entry = counts.get(keyId);
      return entry && entry.windowStart === windowStart ? entry.count : 0;
    },
    sweep(at) {
      for (const [keyId, entry] of counts) if (entry.until <= at) counts.delete(keyId);
    },
    async close() {
      counts.clear();
    },
  };
}

// INCR and PEXPIRE in one atomic step: a counter can never be left without an expiry.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

interface RedisWithHit extends Redis {
  gatehouseHit(key: string, ttlMs: number): Promise<number>;
}

/**
 * Counters in Redis, keyed by API key and window start, so every instance counts into the same window. When
 * Redis cannot answer, the instance counts in memory (each instance then enforces the limit on its own: a
 * degraded limit rather than none and rather than failing requests) and says so in its log, once a minute.
 */
async function redisCounter(url: string, fallback: Counter, log: FastifyBaseLogger): Promise<Counter> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  }) as RedisWithHit;
  redis.defineCommand("gatehouseHit", { numberOfKeys: 1, lua: HIT_SCRIPT });
  let reportedAt = 0;
  const report = (err: unknown) => {
    const at = Date.now();
    if (at - reportedAt < 60_000) return;
    reportedAt = at;
    log.warn(
      { err },
      "rate limit: Redis is unavailable; counting in this instance's memory until it is back",
    );
  };
  redis.on("error", report);
  // Wait briefly for the first connection so the first requests count in Redis; never block the start on it.
  const wait = new AbortController();
  await Promise.race([
    once(redis, "ready", { signal: wait.signal }).catch(() => {}),
    once(redis, "error", { signal: wait.signal }).catch(() => {}),
    new Promise((resolve) => setTimeout(resolve, REDIS_CONNECT_WAIT_MS).unref()),
  ]);
  wait.abort();
  return {
    async hit(keyId, windowStart, windowMs = WINDOW_MS) {
      try {
        return Number(await redis.gatehouseHit(`gatehouse:ratelimit:${keyId}:${windowStart}`, windowMs * 2));
      } catch (err) {
        report(err);
        return fallback.hit(keyId, windowStart, windowMs);
      }
    },
    async count(keyId, windowStart) {
      try {
        return Number((await redis.get(`gatehouse:ratelimit:${keyId}:${windowStart}`)) ?? 0);
      } catch (err) {
        report(err);
        return fallback.count(keyId, windowStart);
      }
    },
    async close() {
      try {
        await redis.quit();
      } catch {
        redis.disconnect();
      }
    },
  };
}

/**
 * Per API key (and per member's session, apart), a fixed one-minute window aligned to the clock (the same windows on every instance). Runs right
 * after authentication, before the body is read: a rejected call has no effect. Every response to a keyed call
 * carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds); a 429 adds `Retry-After`.
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, opts: RateLimitOptions) => {
    const clock = opts.clock ?? Date.now;
    const memory = memoryCounter();
    const counter = opts.redisUrl ? await redisCounter(opts.redisUrl, memory, app.log) : memory;
    const sweeper = setInterval(() => memory.sweep(clock()), WINDOW_MS);
    sweeper.unref();

    const cache = new Map<string, { limit: number; until: number }>();
    async function limitOf(organizationId: string): Promise<number> {
      const cached = cache.get(organizationId);
      if (cached && cached.until > Date.now()) return cached.limit;
      let limit = opts.defaultLimit;
      try {
        limit = (await opts.limitOf(organizationId)) ?? opts.defaultLimit;
      } catch (err) {
        app.log.warn(
          { err, organizationId },
          "rate limit: could not read the organization's limit; using default",
        );
      }
      cache.set(organizationId, { limit, until: Date.now() + LIMIT_CACHE_MS });
      return limit;
    }

    const failures: FailureLimiter = {
      async retryAfter(subject, limit, windowMs) {
        const at = clock();
        const windowStart = Math.floor(at / windowMs) * windowMs;
        const count = await counter.count(`failures:${subject}`, windowStart);
        return count < limit ? 0 : Math.max(1, Math.ceil((windowStart + windowMs - at) / 1000));
      },
      async record(subject, windowMs) {
        const windowStart = Math.floor(clock() / windowMs) * windowMs;
        await counter.hit(`failures:${subject}`, windowStart, windowMs);
      },
    };
    app.decorate("rateLimits", {
      forget: (organizationId: string) => void cache.delete(organizationId),
      failures,
    });
    app.decorateRequest("rateLimit", null);

    app.addHook("onRequest", async (request) => {
      const principal = request.principal;
      if (!principal) return;
      const organizationLimit = await limitOf(principal.organizationId);
      // A member's session counts apart from the keys, with at least the server's limit: an organization limit
      // set too low for its keys can still be raised from the dashboard.
      const session = principal.member !== undefined;
      const limit = session ? Math.max(organizationLimit, opts.defaultLimit) : organizationLimit;
      const at = clock();
      const windowStart = Math.floor(at / WINDOW_MS) * WINDOW_MS;
      const count = await counter.hit(session ? `member:${principal.keyId}` : principal.keyId, windowStart);
      const reset = Math.max(1, Math.ceil((windowStart + WINDOW_MS - at) / 1000));
      const limited = count > limit;
      request.rateLimit = { limit, remaining: Math.max(0, limit - count), reset, limited };
      if (limited) {
        throw new AppError(
          "TOO_MANY_REQUESTS",
          `this ${session ? "session" : "API key"} is over its limit of ${limit} requests per minute; retry the same request in ${reset} s`,
          { limit, retry_after_seconds: reset },
        );
      }
    });

    app.addHook("onSend", (request, reply, payload, done) => {
      const state = request.rateLimit;
      if (state) {
        void reply.header("ratelimit-limit", state.limit);
        void reply.header("ratelimit-remaining", state.remaining);
        void reply.header("ratelimit-reset", state.reset);
        if (state.limited) void reply.header("retry-after", state.reset);
      }
      done(null, payload);
    });

    app.addHook("onClose", async () => {
      clearInterval(sweeper);
      await counter.close();
    });
  },
  { name: "rate-limit", dependencies: ["auth"] },
);
