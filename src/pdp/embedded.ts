import { randomUUID } from "node:crypto";
import { misdirectedKey, type Regions } from "../lib/regions.ts";
import type { FastifyInstance } from "fastify";
import type { ChangeNotifier } from "../changes/feed.ts";
import { AppError } from "../lib/errors.ts";
import { hashSecret } from "../lib/secrets.ts";
import { bearerSecret, type Principal } from "../lib/access.ts";
import { createDecisionLogger, type DecisionLogger } from "./runtime/decision-log.ts";
import { Replica } from "./runtime/replica.ts";
import type { PdpStorage } from "./storage.ts";
import type { FactsProxyRequest, FactsProxyResponse, PdpDeps, PdpRequest, PdpTarget } from "./http/decide.ts";

export const ENVIRONMENT_HEADER = "x-gatehouse-environment";
/** A key's lookup is remembered this long; revocations in this process clear it at once. */
const AUTH_CACHE_MS = 5000;
/** Writes made by other instances (PostgreSQL, scaled out) reach this PDP within one poll. */
const POLL_MS = 500;
/** What a key resolved to is kept this long after its last check, for checks while the database is away. */
const LAST_KNOWN_MS = 60 * 60_000;
/** At most this many keys (by hash and named environment) are remembered for outages. */
const LAST_KNOWN_MAX = 10_000;

export interface EmbeddedPdp extends PdpDeps {
  /** Drops cached key lookups (after a key is revoked or rotated). */
  invalidateKeys(): void;
  dropEnvironment(environmentId: string): void;
  /** The environment's copy, loaded when no check has asked for it yet: the control plane's check routes. */
  environmentTarget(ids: Omit<PdpTarget, "replica">): Promise<PdpTarget>;
  close(): Promise<void>;
}

/**
 * The PDP inside `gatehouse serve`: one replica per environment that a key has asked about, fed from the database
 * and woken by in-process notifications after every write.
 */
export function createEmbeddedPdp(deps: {
  storage: PdpStorage;
  notifier: ChangeNotifier;
  publicUrl: string;
  controlPlane: () => FastifyInstance;
  decisions?: DecisionLogger;
  /** An environment's copy no check has asked for this long is let go (0 keeps every copy). */
  idleMs?: number;
  /** Writes each copy keeps so that listing walks answer at their first page's revision (journal.ts). */
  listingHistory?: number;
  /** How often copies poll the database for writes no notification announced (default `POLL_MS`). */
  pollMs?: number;
  onError?: (error: unknown) => void;
  /** Keys of other regions are answered 421 with their region's base URL, without a lookup. */
  regions?: Regions;
}): EmbeddedPdp {
  const { storage } = deps;
  const idleMs = deps.idleMs ?? 0;
  const pdpId = randomUUID();
  const { decisions, sink } = embeddedDecisionLog(storage, pdpId, deps);
  const replicas = createReplicas(storage, deps.onError, deps.listingHistory);
  const keys = createKeyResolver(storage, replicas, deps.onError, deps.regions);

  function dropEnvironment(environmentId: string): void {
    replicas.drop(environmentId);
    keys.forgetEnvironment(environmentId);
  }

  const unsubscribe = deps.notifier.subscribe((environmentId, revision) =>
    replicas.catchUp(environmentId, revision),
  );
  const poll = setInterval(() => {
    const now = Date.now();
    // Copies of environments no check asked for in a while go, so that memory follows the environments in use;
    // the next check loads the environment again.
    // Not while the database is away: the copy could not be loaded again.
    if (idleMs > 0 && !storage.outage.down) {
      for (const [id, r] of replicas.loaded) if (now - r.usedAt > idleMs) dropEnvironment(id);
    }
    for (const environmentId of replicas.environments()) void replicas.catchUp(environmentId);
    keys.expire(now);
  }, deps.pollMs ?? POLL_MS);
  poll.unref();

  return {
    pdpId,
    publicUrl: deps.publicUrl,
    decisions,
    resolve: keys.resolve,
    forwardFacts: (target, request) => injectFacts(deps.controlPlane(), target, request),
    status() {
      const now = Date.now();
      const environments = [...replicas.loaded].map(([environmentId, r]) => ({
        environmentId,
        revision: r.revision,
        lagMs: now - r.lastSyncAt,
      }));
      return { ready: true, environments };
    },
    invalidateKeys: keys.clear,
    dropEnvironment,
    async environmentTarget(ids) {
      const replica = await replicas.get(ids.environmentId);
      replica.usedAt = Date.now();
      return { ...ids, replica };
    },
    outage: storage.outage,
    async close() {
      unsubscribe();
      clearInterval(poll);
      await decisions.close();
      await sink?.close();
    },
  };
}

/** The decision log into the control plane's database, unless the caller brings its own logger. */
function embeddedDecisionLog(
  storage: PdpStorage,
  pdpId: string,
  deps: { decisions?: DecisionLogger; onError?: (error: unknown) => void },
) {
  if (deps.decisions) return { decisions: deps.decisions, sink: undefined };
  const sink = storage.openDecisionSink();
  const decisions = createDecisionLogger({
    pdpId,
    sink: sink.write,
    // While the database is away chunks wait for it (the queue is bounded), however long it takes.
    retryable: storage.isUnavailable,
    onError: deps.onError,
  });
  return { decisions, sink };
}

type Replicas = ReturnType<typeof createReplicas>;

/** One replica per environment, loaded on first use; `loaded` holds those whose load has finished. */
function createReplicas(
  storage: PdpStorage,
  onError: ((error: unknown) => void) | undefined,
  listingHistory: number | undefined,
) {
  const replicas = new Map<string, Promise<Replica>>();
  const loaded = new Map<string, Replica>();
  return {
    loaded,
    environments: () => replicas.keys(),
    get(environmentId: string): Promise<Replica> {
      let pending = replicas.get(environmentId);
      if (!pending) {
        const replica = new Replica(storage.feed(environmentId), listingHistory);
        pending = replica.load().then(() => {
          loaded.set(environmentId, replica);
          return replica;
        });
        pending.catch(() => replicas.delete(environmentId));
        replicas.set(environmentId, pending);
      }
      return pending;
    },
    /** Applies what the copy lacks; nothing when it already holds `revision` (the NOTIFY of its own write). */
    catchUp(environmentId: string, revision?: number): Promise<void> | undefined {
      if (revision !== undefined && (loaded.get(environmentId)?.revision ?? -1) >= revision) return undefined;
      const pending = replicas.get(environmentId);
      return pending?.then((r) => r.catchUp()).catch((e: unknown) => onError?.(e));
    },
    drop(environmentId: string): void {
      replicas.delete(environmentId);
      loaded.delete(environmentId);
    },
  };
}

/**
 * From a request's API key to the environment it selects, with three memories: key lookups (a few seconds),
 * whole answers of environment keys, and for database outages the last answer of every key seen.
 */
function createKeyResolver(
  storage: PdpStorage,
  replicas: Replicas,
  onError: ((error: unknown) => void) | undefined,
  regions: Regions | undefined,
) {
  const principals = principalCache(storage);
  const targets = targetCache();
  const lastKnown = lastKnownKeys();

  /** The target a key resolved to when the database last answered, if its environment's copy is loaded. */
  function fromMemory(secret: string, knownAs: string): PdpTarget | undefined {
    const known = lastKnown.recall(knownAs);
    const replica = known && replicas.loaded.get(known.environmentId);
    if (!known || !replica) return undefined;
    const now = Date.now();
    known.usedAt = now;
    replica.usedAt = now;
    const { organizationId, projectId, environmentId } = known;
    const target: PdpTarget = { organizationId, projectId, environmentId, replica };
    // The next checks with this key need not try the database again for a while.
    if (known.level === "env") targets.set(secret, target, now);
    return target;
  }

  /** What the key resolves to: from the database, or while it is away, from memory when the key was seen before. */
  async function resolveKey(secret: string, request: PdpRequest): Promise<PdpTarget> {
    // Off the cached path: a key found in the cache was looked up here, so it is of this region.
    const misdirected = regions && misdirectedKey(secret, regions);
    if (misdirected) throw misdirected;
    const named = request.headers[ENVIRONMENT_HEADER];
    const hash = hashSecret(secret);
    const knownAs = `${hash}\n${typeof named === "string" ? named : ""}`;
    // During an outage a known key does not wait for a database that may take seconds to refuse.
    const remembered = storage.outage.down ? fromMemory(secret, knownAs) : undefined;
    if (remembered) return remembered;
    try {
      const { target, level } = await lookUpKey(secret, hash, request);
      lastKnown.remember(knownAs, target, level);
      return target;
    } catch (error) {
      const target = storage.isUnavailable(error) ? fromMemory(secret, knownAs) : undefined;
      if (!target) throw error;
      onError?.(error);
      return target;
    }
  }

  async function lookUpKey(
    secret: string,
    hash: string,
    request: PdpRequest,
  ): Promise<{ target: PdpTarget; level: string }> {
    const principal = await principals.find(secret, hash);
    if (!principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
    if (principal.access === "no_access") throw new AppError("FORBIDDEN_ACCESS", "the API key has no access");
    const env = await environmentOf(storage, principal, request);
    const target: PdpTarget = {
      organizationId: principal.organizationId,
      projectId: env.projectId,
      environmentId: env.id,
      replica: await replicas.get(env.id),
    };
    const now = Date.now();
    target.replica.usedAt = now;
    if (principal.level === "env") targets.set(secret, target, now);
    return { target, level: principal.level };
  }

  return {
    resolve(authorization: string | undefined, request: PdpRequest): PdpTarget | Promise<PdpTarget> {
      const secret = bearerSecret(authorization);
      return targets.get(secret) ?? resolveKey(secret, request);
    },
    /** A deleted environment: its keys must be looked up again (and then found gone), not answered from memory. */
    forgetEnvironment(environmentId: string): void {
      targets.forgetEnvironment(environmentId);
      principals.forgetEnvironment(environmentId);
      lastKnown.forgetEnvironment(environmentId);
    },
    /** Keys are not kept in memory past their cache time. */
    expire(now: number): void {
      targets.expire(now);
      lastKnown.expire(now);
    },
    clear(): void {
      principals.clear();
      targets.clear();
      lastKnown.clear();
    },
  };
}

/** Key lookups, by the key's hash, remembered for a few seconds. */
function principalCache(storage: PdpStorage) {
  const cache = new Map<string, { principal: Principal; expires: number }>();
  return {
    async find(secret: string, hash: string): Promise<Principal | null> {
      const cached = cache.get(hash);
      const now = Date.now();
      if (cached && cached.expires > now) return cached.principal;
      const principal = await storage.findKey(secret);
      if (principal) cache.set(hash, { principal, expires: now + AUTH_CACHE_MS });
      return principal;
    },
    forgetEnvironment(environmentId: string): void {
      for (const [hash, { principal }] of cache)
        if (principal.environmentId === environmentId) cache.delete(hash);
    },
    clear: () => cache.clear(),
  };
}

/**
 * An environment key always selects the same environment: its whole answer is remembered by the key itself, so a
 * check with a known key costs neither a SHA-256 nor a lookup.
 */
function targetCache() {
  const cache = new Map<string, { target: PdpTarget; expires: number }>();
  return {
    /** The key's target while it is remembered (the check uses its copy now). */
    get(secret: string): PdpTarget | undefined {
      const known = cache.get(secret);
      const now = Date.now();
      if (!known || known.expires <= now) return undefined;
      known.target.replica.usedAt = now;
      return known.target;
    },
    set(secret: string, target: PdpTarget, now: number): void {
      cache.set(secret, { target, expires: now + AUTH_CACHE_MS });
    },
    forgetEnvironment(environmentId: string): void {
      for (const [secret, { target }] of cache)
        if (target.environmentId === environmentId) cache.delete(secret);
    },
    expire(now: number): void {
      for (const [secret, { expires }] of cache) if (expires <= now) cache.delete(secret);
    },
    clear: () => cache.clear(),
  };
}

/**
 * The environment each key (by its hash, with the environment it named) resolved to when the database last
 * answered: while the database is away, a check with a key seen before is answered from memory all the same. A
 * key revoked or rotated meanwhile cannot be: that takes the database.
 */
function lastKnownKeys() {
  const known = new Map<
    string,
    { organizationId: string; projectId: string; environmentId: string; level: string; usedAt: number }
  >();
  return {
    recall: (knownAs: string) => known.get(knownAs),
    remember(knownAs: string, { organizationId, projectId, environmentId }: PdpTarget, level: string): void {
      known.delete(knownAs);
      known.set(knownAs, { organizationId, projectId, environmentId, level, usedAt: Date.now() });
      // Bounded: past the cap the least recently resolved key is forgotten first (a Map keeps insertion order).
      if (known.size > LAST_KNOWN_MAX) known.delete(known.keys().next().value as string);
    },
    forgetEnvironment(environmentId: string): void {
      for (const [knownAs, k] of known) if (k.environmentId === environmentId) known.delete(knownAs);
    },
    expire(now: number): void {
      for (const [key, { usedAt }] of known) if (now - usedAt > LAST_KNOWN_MS) known.delete(key);
    },
    clear: () => known.clear(),
  };
}

/** The environment a check is answered from: an environment key's own, else the one named in the header. */
async function environmentOf(
  storage: PdpStorage,
  principal: Principal,
  request: PdpRequest,
): Promise<{ id: string; projectId: string }> {
  if (principal.level === "env" && principal.environmentId && principal.projectId) {
    return { id: principal.environmentId, projectId: principal.projectId };
  }
  const named = request.headers[ENVIRONMENT_HEADER];
  const parts = typeof named === "string" ? named.split("/") : [];
  const [projRef, envRef] = parts;
  if (parts.length !== 2 || !projRef || !envRef) {
    throw new AppError(
      "FORBIDDEN_ACCESS",
      `a PDP answers for one environment: use an environment key, or name the environment in ${ENVIRONMENT_HEADER}: <project>/<environment>`,
    );
  }
  if (principal.level === "project" && projRef !== principal.projectId && projRef !== principal.projectKey) {
    throw new AppError("FORBIDDEN_ACCESS", "the API key's scope does not cover this project");
  }
  const env = await storage.findEnvironment(principal.organizationId, projRef, envRef);
  if (!env) throw new AppError("NOT_FOUND", `environment '${named}' was not found`);
  return env;
}

/** Facts writes sent to the PDP go to the control plane in process, with the caller's key. */
async function injectFacts(
  controlPlane: FastifyInstance,
  target: PdpTarget,
  request: FactsProxyRequest,
): Promise<FactsProxyResponse> {
  const res = await controlPlane.inject({
    method: request.method as "GET",
    url: `/v2/facts/${target.projectId}/${target.environmentId}${request.rest}`,
    headers: { authorization: request.authorization, "content-type": "application/json" },
    ...(request.body !== undefined && { payload: JSON.stringify(request.body) }),
  });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers[k] = v;
  return { status: res.statusCode, headers, body: res.body };
}
