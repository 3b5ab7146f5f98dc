import { changesOf } from "../../../changes/feed.ts";
import type { Replica } from "../replica.ts";
import { ControlPlaneError, type ControlPlane, type Scope } from "./control-plane.ts";
import type { DiskState } from "./disk-state.ts";
import { countChanges, type SyncState } from "./sync-state.ts";

/** Learns the key's environment and loads it from the control plane, or from disk when the control plane is away. */
export async function loadEnvironment(
  cp: ControlPlane,
  sync: SyncState,
  replica: Replica,
  disk: DiskState,
  log: (message: string) => void,
): Promise<void> {
  try {
    await loadFromControlPlane(cp, sync, replica, disk);
    log(`PDP loaded environment ${sync.ids?.environment_id} at revision ${replica.revision}`);
  } catch (error) {
    if (error instanceof ControlPlaneError && error.status === 401)
      throw new Error("the control plane rejected the API key");
    // A key of another region: no retry and no snapshot will help; say where to go.
    if (error instanceof ControlPlaneError && error.misdirected)
      throw new Error(`${cp.url} does not serve this API key: ${error.misdirected.message}`);
    await loadFromDisk(sync, replica, disk, error);
    log(`control plane unreachable; PDP started from its snapshot on disk at revision ${replica.revision}`);
  }
}

/** The environment of the PDP's key, at the control plane's snapshot; the copy on disk becomes that snapshot. */
async function loadFromControlPlane(cp: ControlPlane, sync: SyncState, replica: Replica, disk: DiskState) {
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
}

/** The copy on disk, its journal applied; `cause` is why the control plane could not give it. */
async function loadFromDisk(sync: SyncState, replica: Replica, disk: DiskState, cause: unknown) {
  const stored = await disk.read();
  if (!stored)
    throw new Error(`the control plane is unreachable and there is no snapshot on disk: ${String(cause)}`);
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
}
