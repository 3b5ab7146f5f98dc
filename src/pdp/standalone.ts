import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { Readable } from "node:stream";
import { once } from "node:events";
import v8 from "node:v8";
import vm from "node:vm";
import { randomUUID, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { changesOf, type FeedEntry } from "../changes/feed.ts";
import { AppError } from "../lib/errors.ts";
import { bearerSecret } from "../lib/access.ts";
import { createDecisionLogger, disabledDecisionLogger } from "./runtime/decision-log.ts";
import { openDecisionSpool, type DecisionSpool } from "./runtime/decision-spool.ts";
import { Replica } from "./runtime/replica.ts";
import type { FeedSource, Snapshot, SnapshotHeader } from "./storage.ts";
import { engineAssembler, SnapshotCutError } from "./snapshot-lines.ts";
import type { Engine } from "./engine/index.ts";
import { buildOpaApp, buildPdpApp } from "./http/server.ts";
import type { FactsProxyRequest, FactsProxyResponse, PdpDeps, PdpTarget } from "./http/decide.ts";
import { loggerOptions } from "../http/logging.ts";

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
  /** Changes the journal on disk holds before a fresh snapshot file replaces it (default 10,000). */
  journalLimit?: number;
  log?: (message: string) => void;
}

interface Scope {
  organization_id: string;
  project_id?: string;
  environment_id?: string;
}

interface StoredState extends EnvironmentIds {
  base: Snapshot;
  changes: FeedEntry[];
}

/** A fresh snapshot file replaces the journal once it holds this many changes (a batch counts its items). */
const MAX_JOURNAL = 10_000;
/** The changes in feed entries (a batch counts its items). */
const countChanges = (entries: FeedEntry[]) => entries.reduce((n, entry) => n + changesOf(entry).length, 0);

/** After a compaction failed, the next waits this long. */
const COMPACT_RETRY_MS = 60_000;
const PERSIST_MS = 2000;
/** A snapshot stream that brings nothing for this long is given up (and retried). */
const SNAPSHOT_IDLE_MS = 60_000;
/** Tries at a snapshot whose stream is cut before the PDP gives up on it (and keeps what it has). */
const SNAPSHOT_TRIES = 3;
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
    if (!res.ok) {
      const text = await res.text();
      throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status} ${text}`, text);
    }
    return (await res.json()) as T;
  }

  /**
   * A snapshot stream, fed line by line to `onLine` as it arrives; gives up when nothing arrives for
   * `idleMs` (a large environment takes a while in all, but never stalls).
   */
  async stream(
    pathAndQuery: string,
    onLine: (line: string) => Promise<void> | void,
    idleMs: number,
  ): Promise<void> {
    const controller = new AbortController();
    const idle = setTimeout(() => controller.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
    try {
      const res = await fetch(this.url + pathAndQuery, {
        headers: { authorization: `Bearer ${this.key}`, accept: "application/x-ndjson" },
        signal: controller.signal,
      });
      if (!res.ok || !res.body) {
        const text = await res.text();
        throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status} ${text}`, text);
      }
      const lines = readline.createInterface({
        input: Readable.fromWeb(res.body as import("node:stream/web").ReadableStream),
        crlfDelay: Infinity,
      });
      for await (const line of lines) {
        idle.refresh();
        await onLine(line);
      }
    } finally {
      clearTimeout(idle);
    }
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
    /** The answer's body. */
    readonly body = "",
  ) {
    super(message);
  }

  /** A key of another region (421): the control plane's error, with the region's base URL. */
  get misdirected(): AppError | undefined {
    if (this.status !== 421) return undefined;
    try {
      const body = JSON.parse(this.body) as { message?: string; additional_info?: Record<string, unknown> };
      return new AppError(
        "WRONG_REGION",
        body.message ?? "the API key belongs to another region",
        body.additional_info,
      );
    } catch {
      return new AppError("WRONG_REGION", "the API key belongs to another region");
    }
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
  const disk = new DiskState(options.dataDir);
  const sync: SyncState = {
    pending: [],
    journaled: 0,
    head: 0,
    dirty: false,
    stopped: false,
    pollWait: 0,
    lastContact: 0,
    unreachable: false,
    caughtUpAt: 0,
  };
  const replica = new Replica(feedSource(cp, sync, disk));

  await loadEnvironment(cp, sync, replica, disk, log);
  collectGarbage();
  const target = (): PdpTarget => {
    if (!sync.ids) throw new AppError("SERVICE_UNAVAILABLE", "the PDP has not loaded its environment");
    return {
      organizationId: sync.ids.organization_id,
      projectId: sync.ids.project_id,
      environmentId: sync.ids.environment_id,
      replica,
    };
  };

  const compactor = compaction(cp, sync, disk, options.journalLimit ?? MAX_JOURNAL, log);
  const follow = followChanges(sync, replica, options.pollWaitSeconds ?? 25, compactor);
  const persistTimer = setInterval(() => {
    try {
      disk.persist(sync);
    } catch (error) {
      log(`could not write the PDP snapshot: ${String(error)}`);
    }
  }, PERSIST_MS);
  persistTimer.unref();

  const pdpId = randomUUID();
  sync.spool = options.decisionLog === false ? undefined : openSpool(options, cp, sync, log);
  const decisions = sync.spool
    ? createDecisionLogger({ pdpId, sink: sync.spool.accept, flushIntervalMs: 1000 })
    : disabledDecisionLogger;
  const keyCovers = keyCheck(cp, options.apiKey, target);
  const coveredTarget = (covers: boolean) => {
    if (!covers) throw new AppError("FORBIDDEN_ACCESS", "the API key does not cover this PDP's environment");
    return target();
  };

  const deps: PdpDeps = {
    pdpId,
    publicUrl: cp.url,
    decisions,
    logger: await loggerOptions(options.logLevel),
    // At once for the PDP's own key and keys seen lately: a check then takes no promise.
    resolve(authorization) {
      const covers = keyCovers(bearerSecret(authorization));
      return covers instanceof Promise ? covers.then(coveredTarget) : coveredTarget(covers);
    },
    forwardFacts: (t, request) => forwardFacts(cp.url, t, request),
    status: () => status(sync, replica),
  };
  const apps = await listen(deps, options);

  return {
    replica,
    async close() {
      sync.stopped = true;
      for (const app of apps) await app.close();
      clearInterval(persistTimer);
      await decisions.close().catch(() => {});
      await sync.spool?.close();
      disk.persist(sync);
      // The follower ends after its current long poll; do not keep the process waiting for it.
      void follow;
    },
  };
}

interface EnvironmentIds {
  organization_id: string;
  project_id: string;
  environment_id: string;
}

/** What the PDP knows of its environment and of the change stream; the steps below read and write it. */
interface SyncState {
  ids?: EnvironmentIds;
  /** Feed entries received and not yet appended to the journal on disk (the rest live in the engine and on disk). */
  pending: FeedEntry[];
  /** How many changes the journal on disk holds (a batch counts its items): past the limit, a fresh snapshot file. */
  journaled: number;
  /** The newest revision the control plane has told of. */
  head: number;
  /** Whether the state on disk is older than the engine's. */
  dirty: boolean;
  stopped: boolean;
  /** Seconds a long poll waits (0 until the PDP follows the stream). */
  pollWait: number;
  // What /ready and the lag gauge say. The PDP holds every revision while a long poll it made at the head is
  // waiting (the control plane answers it as soon as something newer commits), and holds less once that poll
  // fails: its lag is the time since it last knew it held the head, 0 while it still does.
  /** When the control plane last answered (0: not since this process started). */
  lastContact: number;
  /** Whether the last request of the change stream failed. */
  unreachable: boolean;
  /** When an answer last showed the PDP at the head (0: not since this process started). */
  caughtUpAt: number;
  /** When the long poll waiting now was made while at the head (undefined: no such poll waiting). */
  waitingAtHeadSince?: number | undefined;
  /** Opened once the PDP knows its environment, so that it ships to the right path. */
  spool?: DecisionSpool | undefined;
}

/** The control plane answered: note when, and let the spool ship again if it was away. */
function contact(sync: SyncState): void {
  sync.lastContact = Date.now();
  if (sync.unreachable) {
    sync.unreachable = false;
    sync.spool?.wake();
  }
}

/** The replica's feed: the control plane's snapshot and change stream, recorded for the disk and the lag. */
function feedSource(cp: ControlPlane, sync: SyncState, disk: DiskState): FeedSource {
  const syncPath = () => `/v2/pdp-sync/${sync.ids?.project_id}/${sync.ids?.environment_id}`;
  return {
    async snapshot() {
      for (let attempt = 1; ; attempt++) {
        try {
          const snap = await disk.receive((onLine) =>
            cp.stream(`${syncPath()}/snapshot`, onLine, SNAPSHOT_IDLE_MS),
          );
          // The copy on disk is this snapshot now, and its journal is empty.
          sync.pending = [];
          sync.journaled = 0;
          sync.head = Math.max(sync.head, snap.revision);
          contact(sync);
          return snap;
        } catch (error) {
          if (error instanceof ControlPlaneError || attempt >= SNAPSHOT_TRIES) throw error;
          await new Promise((r) => setTimeout(r, 250 * attempt));
        }
      }
    },
    async changesAfter(revision) {
      if (revision >= sync.head && sync.pollWait > 0) sync.waitingAtHeadSince = Date.now();
      let res: { revision: number; head: number; changes: FeedEntry[] };
      try {
        res = await cp.get(
          `${syncPath()}/changes?after=${revision}&wait=${sync.pollWait}`,
          undefined,
          (sync.pollWait + 10) * 1000,
        );
      } finally {
        sync.waitingAtHeadSince = undefined;
      }
      for (const change of res.changes) sync.pending.push(change);
      sync.head = res.head;
      sync.dirty = sync.dirty || res.changes.length > 0;
      contact(sync);
      // The replica applies these before it asks again.
      if (res.revision >= res.head) sync.caughtUpAt = sync.lastContact;
      return { changes: res.changes, revision: res.revision };
    },
  };
}

/**
 * The PDP's copy on disk: the snapshot it loaded (`pdp-snapshot.ndjson`, the control plane's stream as it arrived)
 * and the changes since, appended to `pdp-journal.jsonl` as they come, a line each. A snapshot is written to a
 * temporary file while it streams in and takes the old one's place only once whole, so a cut stream leaves the old
 * copy as it was. Persisting costs the new changes, not the whole environment. A line a crash cut short ends the
 * journal; lines of an older snapshot's journal (a crash between the two writes) are at or below the new
 * snapshot's revision, which loading skips. Copies of older versions (`pdp-snapshot.json`, one JSON document) are
 * still read, and replaced by the next snapshot.
 */
class DiskState {
  private readonly file: string;
  private readonly legacyFile: string;
  private readonly journal: string;
  /** Counts the snapshots received whole: a renewal that one overtook is dropped. */
  private received = 0;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, "pdp-snapshot.ndjson");
    this.legacyFile = path.join(dataDir, "pdp-snapshot.json");
    this.journal = path.join(dataDir, "pdp-journal.jsonl");
    fs.mkdirSync(dataDir, { recursive: true });
  }

  /**
   * Receives a snapshot's lines from `stream`: each page goes into a new engine and to the temporary file as it
   * arrives. Once the stream ends whole, the file becomes the copy and the journal starts over.
   */
  async receive(
    stream: (onLine: (line: string) => Promise<void>) => Promise<void>,
  ): Promise<{ revision: number; engine: Engine }> {
    const tmp = `${this.file}.tmp`;
    const out = fs.createWriteStream(tmp);
    const { assembler, engine } = engineAssembler();
    let failed: Error | undefined;
    out.on("error", (error) => (failed = error));
    try {
      await stream(async (line) => {
        if (failed) throw failed;
        assembler.line(line);
        if (!out.write(`${line}\n`)) await once(out, "drain");
      });
      const { revision } = assembler.finish();
      await new Promise<void>((resolve, reject) =>
        out.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
      fs.renameSync(tmp, this.file);
      fs.rmSync(this.legacyFile, { force: true });
      fs.writeFileSync(this.journal, "");
      this.received++;
      return { revision, engine };
    } catch (error) {
      out.destroy();
      fs.rmSync(tmp, { force: true });
      throw error instanceof SnapshotCutError || error instanceof ControlPlaneError
        ? error
        : new SnapshotCutError(`the snapshot stream was cut: ${String(error)}`);
    }
  }

  async read(): Promise<StoredState | undefined> {
    const stored = fs.existsSync(this.file) ? await this.readSnapshot() : this.readLegacy();
    if (!stored) return undefined;
    // Older versions kept the changes in the snapshot's file.
    const changes = [...stored.changes];
    const lines = fs.existsSync(this.journal) ? fs.readFileSync(this.journal, "utf8").split("\n") : [];
    const kept: string[] = [];
    for (const line of lines) {
      if (line === "") continue;
      try {
        changes.push(JSON.parse(line) as FeedEntry);
        kept.push(line);
      } catch {
        // Cut short by a crash: the journal ends before it, and goes on from there.
        fs.writeFileSync(this.journal, kept.map((l) => `${l}\n`).join(""));
        break;
      }
    }
    return { ...stored, changes };
  }

  private async readSnapshot(): Promise<StoredState | undefined> {
    const { assembler, engine } = engineAssembler();
    try {
      const lines = readline.createInterface({ input: fs.createReadStream(this.file), crlfDelay: Infinity });
      for await (const line of lines) assembler.line(line);
      const header = assembler.finish();
      return {
        organization_id: header.organization_id,
        project_id: header.project_id,
        environment_id: header.environment_id,
        base: { revision: header.revision, engine },
        changes: [],
      };
    } catch {
      return undefined;
    }
  }

  private readLegacy(): StoredState | undefined {
    try {
      const stored = JSON.parse(fs.readFileSync(this.legacyFile, "utf8")) as StoredState;
      return { ...stored, changes: stored.changes ?? [] };
    } catch {
      return undefined;
    }
  }

  /** Appends the changes not yet on disk to the journal, and lets them go from memory. */
  persist(sync: SyncState): void {
    if (!sync.dirty || !sync.ids) return;
    const fresh = sync.pending;
    if (fresh.length > 0)
      fs.appendFileSync(this.journal, fresh.map((c) => `${JSON.stringify(c)}\n`).join(""));
    sync.pending = [];
    sync.journaled += countChanges(fresh);
    sync.dirty = false;
  }

  /**
   * Replaces the copy with a fresh snapshot from `stream`, written to disk only (the engine already holds all of
   * it, change by change): nothing is parsed but the header and the end line, and a stream without its end line
   * leaves the old copy. The journal then keeps only the changes after the new snapshot's revision. A crash
   * between the rename and the journal's rewrite leaves lines at or below that revision, which loading skips.
   */
  async compact(stream: (onLine: (line: string) => Promise<void>) => Promise<void>, sync: SyncState) {
    const tmp = `${this.file}.renew.tmp`;
    const received = this.received;
    const out = fs.createWriteStream(tmp);
    let header: SnapshotHeader | undefined;
    let last = "";
    let failed: Error | undefined;
    out.on("error", (error) => (failed = error));
    try {
      await stream(async (line) => {
        if (failed) throw failed;
        if (line === "") return;
        if (!header) header = JSON.parse(line) as SnapshotHeader;
        last = line;
        if (!out.write(`${line}\n`)) await once(out, "drain");
      });
      if (header?.format !== "gatehouse-snapshot/ndjson-1" || !last.startsWith('{"end":'))
        throw new SnapshotCutError("the snapshot stream was cut before its end");
      await new Promise<void>((resolve, reject) =>
        out.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
      // A whole snapshot loaded meanwhile replaced the copy and its journal: this one must not go over it.
      if (this.received !== received)
        throw new SnapshotCutError("a newer snapshot replaced the copy meanwhile");
    } catch (error) {
      out.destroy();
      fs.rmSync(tmp, { force: true });
      throw error;
    }
    fs.renameSync(tmp, this.file);
    fs.rmSync(this.legacyFile, { force: true });
    this.persist(sync);
    const revision = header.revision;
    const kept = fs
      .readFileSync(this.journal, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => ({ line, entry: JSON.parse(line) as FeedEntry }))
      .filter(({ entry }) => entry.revision > revision);
    fs.writeFileSync(`${this.journal}.tmp`, kept.map(({ line }) => `${line}\n`).join(""));
    fs.renameSync(`${this.journal}.tmp`, this.journal);
    sync.journaled = countChanges(kept.map(({ entry }) => entry));
    return revision;
  }
}

/** Learns the key's environment and loads it from the control plane, or from disk when the control plane is away. */
async function loadEnvironment(
  cp: ControlPlane,
  sync: SyncState,
  replica: Replica,
  disk: DiskState,
  log: (message: string) => void,
): Promise<void> {
  try {
    const scope = await cp.get<Scope>("/v2/api-key/scope");
    if (!scope.project_id || !scope.environment_id) {
      throw new Error("the standalone PDP needs an environment API key (--api-key)");
    }
    sync.ids = {
      organization_id: scope.organization_id,
      project_id: scope.project_id,
      environment_id: scope.environment_id,
    };
    await replica.load();
    disk.persist(sync);
    log(`PDP loaded environment ${sync.ids.environment_id} at revision ${replica.revision}`);
  } catch (error) {
    if (error instanceof ControlPlaneError && error.status === 401)
      throw new Error("the control plane rejected the API key");
    // A key of another region: no retry and no snapshot will help; say where to go.
    if (error instanceof ControlPlaneError && error.misdirected)
      throw new Error(`${cp.url} does not serve this API key: ${error.misdirected.message}`);
    const stored = await disk.read();
    if (!stored)
      throw new Error(`the control plane is unreachable and there is no snapshot on disk: ${String(error)}`);
    sync.ids = {
      organization_id: stored.organization_id,
      project_id: stored.project_id,
      environment_id: stored.environment_id,
    };
    sync.journaled = countChanges(stored.changes);
    await replica.load(stored.base);
    for (const entry of stored.changes) {
      if (entry.revision > replica.revision) replica.engine.applyAll(changesOf(entry));
    }
    replica.revision = Math.max(stored.base.revision, ...stored.changes.map((c) => c.revision));
    replica.lastSyncAt = 0;
    sync.unreachable = true;
    log(`control plane unreachable; PDP started from its snapshot on disk at revision ${replica.revision}`);
  }
}

/**
 * Keeps the journal on disk bounded: past `limit` changes, a fresh snapshot file from the control plane replaces
 * the copy, in the background. The engine is not rebuilt (it holds every change already), so checks go on
 * unhindered and memory stays the engine's.
 */
function compaction(
  cp: ControlPlane,
  sync: SyncState,
  disk: DiskState,
  limit: number,
  log: (message: string) => void,
): () => void {
  let running = false;
  let notBefore = 0;
  return () => {
    if (running || sync.journaled + countChanges(sync.pending) <= limit || Date.now() < notBefore) return;
    running = true;
    const syncPath = `/v2/pdp-sync/${sync.ids?.project_id}/${sync.ids?.environment_id}`;
    disk
      .compact((onLine) => cp.stream(`${syncPath}/snapshot`, onLine, SNAPSHOT_IDLE_MS), sync)
      .then(
        (revision) => log(`PDP snapshot on disk renewed at revision ${revision}`),
        (error: unknown) => {
          notBefore = Date.now() + COMPACT_RETRY_MS;
          log(`could not renew the PDP snapshot on disk: ${String(error)}`);
        },
      )
      .finally(() => (running = false));
  };
}

/**
 * One full GC once the engine is built: the parsed snapshot, as large as the engine, is garbage by then, and V8
 * would keep its pages (the PDP's RSS stayed at its peak) until the heap next grows that far, which a PDP answering
 * checks may never do.
 */
function collectGarbage(): void {
  v8.setFlagsFromString("--expose-gc");
  (vm.runInNewContext("gc") as () => void)();
}

/** Follows the change stream until stopped: each round long-polls, applies what arrived, and backs off when down. */
async function followChanges(
  sync: SyncState,
  replica: Replica,
  pollWaitSeconds: number,
  compact: () => void,
): Promise<void> {
  let backoff = 250;
  sync.pollWait = pollWaitSeconds;
  while (!sync.stopped) {
    try {
      await replica.catchUp();
      backoff = 250;
      compact();
    } catch {
      sync.unreachable = true;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 5000);
    }
  }
}

/** Batches the control plane cannot take wait on disk, next to the snapshot, until it can. */
function openSpool(
  options: StandaloneOptions,
  cp: ControlPlane,
  sync: SyncState,
  log: (message: string) => void,
): DecisionSpool {
  return openDecisionSpool({
    dir: path.join(options.dataDir, "decision-log-spool"),
    maxBytes: options.decisionLogSpoolBytes ?? DEFAULT_SPOOL_BYTES,
    // This PDP serves one environment: each chunk goes to the path of the one it serves.
    ship: (entries, pdpId) => {
      const query = pdpId === undefined ? "" : `?pdp_id=${encodeURIComponent(pdpId)}`;
      return cp.post(
        `/v2/pdps/${sync.ids?.project_id}/${sync.ids?.environment_id}/decision_logs${query}`,
        entries,
      );
    },
    refused: (error) => error instanceof ControlPlaneError && REFUSED.has(error.status),
    log,
  });
}

/**
 * Whether a key covers this PDP's environment: its own key at once, any other as the control plane scopes it
 * (remembered for a minute).
 */
function keyCheck(
  cp: ControlPlane,
  apiKey: string,
  target: () => PdpTarget,
): (key: string) => boolean | Promise<boolean> {
  const keyCache = new Map<string, number>();
  const ownKey = Buffer.from(apiKey);
  return (key) => {
    const given = Buffer.from(key);
    if (given.length === ownKey.length && timingSafeEqual(given, ownKey)) return true;
    const cached = keyCache.get(key);
    if (cached !== undefined && cached > Date.now()) return true;
    return askControlPlane(key);
  };

  async function askControlPlane(key: string): Promise<boolean> {
    let scope: Scope;
    try {
      scope = await cp.get<Scope>("/v2/api-key/scope", key, 5000);
    } catch (error) {
      if (error instanceof ControlPlaneError && error.status === 401) return false;
      if (error instanceof ControlPlaneError && error.misdirected) throw error.misdirected;
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
}

/** Facts writes sent to the PDP go to the control plane over HTTP, with the caller's key. */
async function forwardFacts(
  cpUrl: string,
  t: PdpTarget,
  request: FactsProxyRequest,
): Promise<FactsProxyResponse> {
  const res = await fetch(`${cpUrl}/v2/facts/${t.projectId}/${t.environmentId}${request.rest}`, {
    method: request.method,
    headers: { authorization: request.authorization, "content-type": "application/json" },
    ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  return { status: res.status, headers, body: await res.text() };
}

/** What /ready and /metrics report: revision, lag, revisions behind, the control plane link and the spool. */
function status(sync: SyncState, replica: Replica): ReturnType<PdpDeps["status"]> {
  const t = sync.ids?.environment_id ?? "";
  const now = Date.now();
  // A poll made at the head that waits longer than it may has lost its answer: the PDP may be behind.
  const atHead =
    !sync.unreachable &&
    sync.waitingAtHeadSince !== undefined &&
    now - sync.waitingAtHeadSince < (sync.pollWait + 10) * 1000 &&
    replica.revision >= sync.head;
  return {
    ready: replica.revision >= 0,
    environments: [
      {
        environmentId: t,
        revision: replica.revision,
        lagMs: atHead ? 0 : sync.caughtUpAt === 0 ? -1 : now - sync.caughtUpAt,
        // Unknown while the control plane is away: it may have taken any number of writes meanwhile.
        behind: sync.unreachable ? null : Math.max(0, sync.head - replica.revision),
      },
    ],
    controlPlane: {
      reachable: !sync.unreachable,
      lastSyncAgeMs: sync.lastContact === 0 ? null : now - sync.lastContact,
    },
    ...(sync.spool && { decisionLogSpool: sync.spool.stats }),
  };
}

/** The PDP's port, and the OPA-compatible one unless it is 0. */
async function listen(deps: PdpDeps, options: StandaloneOptions): Promise<FastifyInstance[]> {
  const apps: FastifyInstance[] = [await buildPdpApp(deps)];
  await apps[0]!.listen({ host: options.host, port: options.pdpPort });
  if (options.opaPort !== 0) {
    apps.push(await buildOpaApp(deps));
    await apps[1]!.listen({ host: options.host, port: options.opaPort });
  }
  return apps;
}
