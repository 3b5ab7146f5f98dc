import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { AppError } from "../lib/errors.ts";
import { bearerSecret } from "../lib/access.ts";
import { createDecisionLogger, disabledDecisionLogger } from "./runtime/decision-log.ts";
import { openDecisionSpool, type DecisionSpool } from "./runtime/decision-spool.ts";
import { Replica } from "./runtime/replica.ts";
import { ControlPlane, ControlPlaneError } from "./runtime/standalone/control-plane.ts";
import { DiskState } from "./runtime/standalone/disk-state.ts";
import { feedSource, followChanges } from "./runtime/standalone/change-stream.ts";
import { compaction } from "./runtime/standalone/compaction.ts";
import { loadEnvironment } from "./runtime/standalone/load-environment.ts";
import { keyCheck } from "./runtime/standalone/key-check.ts";
import { newSyncState, syncStatus, type SyncState } from "./runtime/standalone/sync-state.ts";
import { buildOpaApp, buildPdpApp } from "./http/server.ts";
import type { PdpDeps, PdpTarget } from "./http/decide.ts";
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
  /** Writes the engine keeps so that listing walks answer at their first page's revision (journal.ts). */
  listingHistory?: number;
  log?: (message: string) => void;
}

/** A fresh snapshot file replaces the journal once it holds this many changes (a batch counts its items). */
const MAX_JOURNAL = 10_000;
const PERSIST_MS = 2000;
const DEFAULT_SPOOL_BYTES = 100 * 1024 * 1024;
/** Statuses with which the control plane refuses a decision log batch for good: retrying sends the same bytes. */
const REFUSED = new Set([400, 413, 422]);

/**
 * `gatehouse pdp`: one environment's PDP in its own process. It loads a snapshot from the control plane (or, when
 * the control plane is away, from its last snapshot on disk), follows the ordered change stream by long polling,
 * ships its decision log in batches, and reports how far behind it is on /ready and /metrics. The pieces are in
 * runtime/standalone/; this file puts them together and listens.
 */
export async function startStandalonePdp(options: StandaloneOptions) {
  const log = options.log ?? ((m: string) => console.log(m));
  const cp = new ControlPlane(options.controlPlaneUrl.replace(/\/+$/, ""), options.apiKey);
  const disk = new DiskState(options.dataDir);
  const sync = newSyncState();
  const replica = new Replica(feedSource(cp, sync, disk, log), options.listingHistory);

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
    // Facts writes sent to the PDP go to the control plane over HTTP, with the caller's key.
    forwardFacts: (t, request) =>
      cp.forward(
        request.method,
        `/v2/facts/${t.projectId}/${t.environmentId}${request.rest}`,
        request.authorization,
        request.body,
      ),
    status: () => syncStatus(sync, replica),
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

/**
 * One full GC once the engine is built: the parsed snapshot, as large as the engine, is garbage by then, and V8
 * would keep its pages (the PDP's RSS stayed at its peak) until the heap next grows that far, which a PDP answering
 * checks may never do.
 */
function collectGarbage(): void {
  v8.setFlagsFromString("--expose-gc");
  (vm.runInNewContext("gc") as () => void)();
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
