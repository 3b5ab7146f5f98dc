import type { ControlPlane } from "./control-plane.ts";
import { SNAPSHOT_IDLE_MS } from "./change-stream.ts";
import type { DiskState } from "./disk-state.ts";
import { countChanges, syncPath, type SyncState } from "./sync-state.ts";

/** After a compaction failed, the next waits this long. */
const COMPACT_RETRY_MS = 60_000;

/**
 * Keeps the journal on disk bounded: past `limit` changes, a fresh snapshot file from the control plane replaces
 * the copy, in the background. The engine is not rebuilt (it holds every change already), so checks go on
 * unhindered and memory stays the engine's.
 */
export function compaction(
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
    const snapshotPath = `${syncPath(sync)}/snapshot`;
    disk
      .compact((onLine) => cp.stream(snapshotPath, onLine, SNAPSHOT_IDLE_MS), sync)
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
