import fs from "node:fs";
import path from "node:path";
import { randomUUID, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { StoredChange } from "../changes/feed.ts";
import { AppError } from "../lib/errors.ts";
import type { Change } from "./engine/types.ts";
import { createDecisionLogger, disabledDecisionLogger } from "./decision-log.ts";
import { openDecisionSpool, type DecisionSpool } from "./decision-spool.ts";
import { Replica, type FeedSource } from "./replica.ts";
import type { Snapshot } from "./snapshot.ts";
import { buildOpaApp, buildPdpApp, type PdpDeps, type PdpTarget } from "./server.ts";

export interface StandaloneOptions {
  controlPlaneUrl: string;
  apiKey: string;
  host: string;
  pdpPort: number;
  opaPort: number;
  dataDir: string;
  logLevel: string;
  decisionLog?: boolean;
  /** Bytes of decision log the PDP keeps on disk while the control plane is away (default 100 MiB). */
  decisionLogSpoolBytes?: number;
  /** Seconds one long poll of the change stream may wait (the control plane caps it at 30). */
  pollWaitSeconds?: number;
  log?: (message: string) => void;
}

interface Scope {
  organization_id: string;
  project_id?: string;
  environment_id?: string;
}

interface DiskState {
  organization_id: string;
  project_id: string;
  environment_id: string;
  base: Snapshot;
  changes: StoredChange[];
}

/** A fresh snapshot replaces the journal once it holds this many changes. */
const MAX_JOURNAL = 10_000;
const PERSIST_MS = 2000;
const KEY_CACHE_MS = 60_000;
const DEFAULT_SPOOL_BYTES = 100 * 1024 * 1024;
/** Statuses with which the control plane refuses a decision log batch for good: retrying sends the same bytes. */
const REFUSED = new Set([400, 413, 422]);

class ControlPlane {
  constructor(
    readonly url: string,
    private readonly key: string,
  ) {}

  async get<T>(pathAndQuery: string, key = this.key, timeoutMs = 10_000): Promise<T> {
    const res = await fetch(this.url + pathAndQuery, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok)
      throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  /** `body` is JSON text, or its UTF-8 bytes. */
  async post(pathAndQuery: string, body: string | Uint8Array<ArrayBuffer>): Promise<void> {
    const res = await fetch(this.url + pathAndQuery, {
      method: "POST",
      headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status}`);
  }
}

class ControlPlaneError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * `gatehouse pdp`: one environment's PDP in its own process. It loads a snapshot from the control plane (or, when
 * the control plane is away, from its last snapshot on disk), follows the ordered change stream by long polling,
 * ships its decision log in batches, and reports how far behind it is on /ready and /metrics.
 */
export async function startStandalonePdp(options: StandaloneOptions) {
  const log = options.log ?? ((m: string) => console.log(m));
  const cp = new ControlPlane(options.controlPlaneUrl.replace(/\/+$/, ""), options.apiKey);
  const stateFile = path.join(options.dataDir, "pdp-snapshot.json");
  fs.mkdirSync(options.dataDir, { recursive: true });

  let ids: { organization_id: string; project_id: string; environment_id: string } | undefined;
  let base: Snapshot | undefined;
  let journal: StoredChange[] = [];
  let head = 0;
  let dirty = false;
  let stopped = false;
  let pollWait = 0;
  // What /ready and the lag gauge say. The PDP holds every revision while a long poll it made at the head is
  // waiting (the control plane answers it as soon as something newer commits), and holds less once that poll
  // fails: its lag is the time since it last knew it held the head, 0 while it still does.
  /** When the control plane last answered (0: not since this process started). */
  let lastContact = 0;
  /** Whether the last request of the change stream failed. */
  let unreachable = false;
  /** When an answer last showed the PDP at the head (0: not since this process started). */
  let caughtUpAt = 0;
  /** When the long poll waiting now was made while at the head (undefined: no such poll waiting). */
  let waitingAtHeadSince: number | undefined;
  /** Opened once the PDP knows its environment, so that it ships to the right path. */
  let spool: DecisionSpool | undefined = undefined;

  const syncPath = () => `/v2/pdp-sync/${ids?.project_id}/${ids?.environment_id}`;
  const source: FeedSource = {
    async snapshot() {
      const snap = await cp.get<
        Snapshot & { organization_id: string; project_id: string; environment_id: string }
      >(`${syncPath()}/snapshot`);
      base = { revision: snap.revision, data: snap.data };
      journal = [];
      head = Math.max(head, snap.revision);
      dirty = true;
      contact();
      return base;
    },
    async changesAfter(revision) {
      if (revision >= head && pollWait > 0) waitingAtHeadSince = Date.now();
      let res: { revision: number; head: number; changes: StoredChange[] };
      try {
        res = await cp.get(
          `${syncPath()}/changes?after=${revision}&wait=${pollWait}`,
          undefined,
          (pollWait + 10) * 1000,
        );
      } finally {
        waitingAtHeadSince = undefined;
      }
      journal.push(...res.changes);
      head = res.head;
      dirty = dirty || res.changes.length > 0;
      contact();
      // The replica applies these before it asks again.
      if (res.revision >= res.head) caughtUpAt = lastContact;
      return { changes: res.changes, revision: res.revision };
    },
  };
  const replica = new Replica(source);

  function contact(): void {
    lastContact = Date.now();
    if (unreachable) {
      unreachable = false;
      spool?.wake();
    }
  }

  function readDisk(): DiskState | undefined {
    try {
      return JSON.parse(fs.readFileSync(stateFile, "utf8")) as DiskState;
    } catch {
      return undefined;
    }
  }

  function persist(): void {
    if (!dirty || !base || !ids) return;
    const state: DiskState = { ...ids, base, changes: journal };
    const tmp = `${stateFile}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(state));
    fs.renameSync(tmp, stateFile);
    dirty = false;
  }

  async function start(): Promise<void> {
    try {
      const scope = await cp.get<Scope>("/v2/api-key/scope");
      if (!scope.project_id || !scope.environment_id) {
        throw new Error("the standalone PDP needs an environment API key (--api-key)");
      }
      ids = {
        organization_id: scope.organization_id,
        project_id: scope.project_id,
        environment_id: scope.environment_id,
      };
      await replica.load();
      persist();
      log(`PDP loaded environment ${ids.environment_id} at revision ${replica.revision}`);
    } catch (error) {
      if (error instanceof ControlPlaneError && error.status === 401)
        throw new Error("the control plane rejected the API key");
      const disk = readDisk();
      if (!disk)
        throw new Error(
          `the control plane is unreachable and there is no snapshot on disk: ${String(error)}`,
        );
      ids = {
        organization_id: disk.organization_id,
        project_id: disk.project_id,
        environment_id: disk.environment_id,
      };
      base = disk.base;
      journal = disk.changes;
      await replica.load(disk.base);
      for (const change of disk.changes) {
        if (change.revision > replica.revision) {
          replica.engine.apply({ kind: change.kind, op: change.op, data: change.data } as Change);
        }
      }
      replica.revision = Math.max(disk.base.revision, ...disk.changes.map((c) => c.revision));
      replica.lastSyncAt = 0;
      unreachable = true;
      log(`control plane unreachable; PDP started from its snapshot on disk at revision ${replica.revision}`);
    }
  }

  await start();
  const target = (): PdpTarget => {
    if (!ids) throw new AppError("SERVICE_UNAVAILABLE", "the PDP has not loaded its environment");
    return {
      organizationId: ids.organization_id,
      projectId: ids.project_id,
      environmentId: ids.environment_id,
      replica,
    };
  };

  // Follow the change stream: each round long-polls, applies what arrived, and retries with backoff when down.
  const follow = (async () => {
    let backoff = 250;
    pollWait = options.pollWaitSeconds ?? 25;
    while (!stopped) {
      try {
        await replica.catchUp();
        backoff = 250;
        if (journal.length > MAX_JOURNAL) await replica.load();
      } catch {
        unreachable = true;
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  })();
  const persistTimer = setInterval(() => {
    try {
      persist();
    } catch (error) {
      log(`could not write the PDP snapshot: ${String(error)}`);
    }
  }, PERSIST_MS);
  persistTimer.unref();

  const keyCache = new Map<string, number>();
  const ownKey = Buffer.from(options.apiKey);
  async function keyCovers(key: string): Promise<boolean> {
    const given = Buffer.from(key);
    if (given.length === ownKey.length && timingSafeEqual(given, ownKey)) return true;
    const cached = keyCache.get(key);
    if (cached !== undefined && cached > Date.now()) return true;
    let scope: Scope;
    try {
      scope = await cp.get<Scope>("/v2/api-key/scope", key, 5000);
    } catch (error) {
      if (error instanceof ControlPlaneError && error.status === 401) return false;
      throw new AppError(
        "SERVICE_UNAVAILABLE",
        "the control plane cannot be reached to verify this key; use the PDP's own key",
      );
    }
    const t = target();
    const covers =
      scope.organization_id === t.organizationId &&
      (scope.project_id === undefined || scope.project_id === t.projectId) &&
      (scope.environment_id === undefined || scope.environment_id === t.environmentId);
    if (covers) keyCache.set(key, Date.now() + KEY_CACHE_MS);
    return covers;
  }

  const pdpId = randomUUID();
  // Batches the control plane cannot take wait on disk, next to the snapshot, until it can.
  spool =
    options.decisionLog === false
      ? undefined
      : openDecisionSpool({
          dir: path.join(options.dataDir, "decision-log-spool"),
          maxBytes: options.decisionLogSpoolBytes ?? DEFAULT_SPOOL_BYTES,
          // This PDP serves one environment: each chunk goes to the path of the one it serves.
          ship: (entries) =>
            cp.post(`/v2/pdps/${ids?.project_id}/${ids?.environment_id}/decision_logs`, entries),
          refused: (error) => error instanceof ControlPlaneError && REFUSED.has(error.status),
          log,
        });
  const decisions = spool
    ? createDecisionLogger({ pdpId, sink: spool.accept, flushIntervalMs: 1000 })
    : disabledDecisionLogger;

  const deps: PdpDeps = {
    pdpId,
    publicUrl: cp.url,
    decisions,
    logger: { level: options.logLevel },
    async resolve(authorization) {
      if (authorization === undefined)
        throw new AppError("UNAUTHORIZED", "the Authorization header is missing");
      const key = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization)?.[1];
      if (!key) throw new AppError("UNAUTHORIZED", "the Authorization header must be 'Bearer <API key>'");
      if (!(await keyCovers(key)))
        throw new AppError("FORBIDDEN_ACCESS", "the API key does not cover this PDP's environment");
      return target();
    },
    async forwardFacts(t, request) {
      const res = await fetch(`${cp.url}/v2/facts/${t.projectId}/${t.environmentId}${request.rest}`, {
        method: request.method,
        headers: { authorization: request.authorization, "content-type": "application/json" },
        ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
        signal: AbortSignal.timeout(30_000),
      });
      const headers: Record<string, string> = {};
      res.headers.forEach((value, name) => (headers[name] = value));
      return { status: res.status, headers, body: await res.text() };
    },
    status() {
      const t = ids?.environment_id ?? "";
      const now = Date.now();
      // A poll made at the head that waits longer than it may has lost its answer: the PDP may be behind.
      const atHead =
        !unreachable &&
        waitingAtHeadSince !== undefined &&
        now - waitingAtHeadSince < (pollWait + 10) * 1000 &&
        replica.revision >= head;
      return {
        ready: replica.revision >= 0,
        environments: [
          {
            environmentId: t,
            revision: replica.revision,
            lagMs: atHead ? 0 : caughtUpAt === 0 ? -1 : now - caughtUpAt,
            // Unknown while the control plane is away: it may have taken any number of writes meanwhile.
            behind: unreachable ? null : Math.max(0, head - replica.revision),
          },
        ],
        controlPlane: {
          reachable: !unreachable,
          lastSyncAgeMs: lastContact === 0 ? null : now - lastContact,
        },
        ...(spool && { decisionLogSpool: spool.stats }),
      };
    },
  };

  const apps: FastifyInstance[] = [await buildPdpApp(deps)];
  await apps[0]!.listen({ host: options.host, port: options.pdpPort });
  if (options.opaPort !== 0) {
    apps.push(await buildOpaApp(deps));
    await apps[1]!.listen({ host: options.host, port: options.opaPort });
  }

  return {
    replica,
    async close() {
      stopped = true;
      for (const app of apps) await app.close();
      clearInterval(persistTimer);
      await decisions.close().catch(() => {});
      await spool?.close();
      persist();
      // The follower ends after its current long poll; do not keep the process waiting for it.
      void follow;
    },
  };
}
