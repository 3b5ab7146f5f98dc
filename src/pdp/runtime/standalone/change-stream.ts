import type { FeedEntry } from "../../../changes/feed.ts";
import type { FeedSource } from "../../storage.ts";
import type { Replica } from "../replica.ts";
import { ControlPlaneError, type ControlPlane } from "./control-plane.ts";
import type { DiskState } from "./disk-state.ts";
import { contact, syncPath, type SyncState } from "./sync-state.ts";
import type { Change } from "../../engine/types.ts";

/** A snapshot stream that brings nothing for this long is given up (and retried). */
export const SNAPSHOT_IDLE_MS = 60_000;
/** Tries at a snapshot whose stream is cut before the PDP gives up on it (and keeps what it has). */
const SNAPSHOT_TRIES = 3;

/**
 * The replica's feed: the control plane's snapshot and change stream, recorded for the disk and the lag. A 410 from
 * the change stream (its changes after the PDP's revision are no longer kept) is `gone`: the replica loads a
 * snapshot.
 */
export function feedSource(
  cp: ControlPlane,
  sync: SyncState,
  disk: DiskState,
  log: (message: string) => void,
): FeedSource {
  return {
    async snapshot() {
      for (let attempt = 1; ; attempt++) {
        try {
          const snap = await disk.receive((onLine) =>
            cp.stream(`${syncPath(sync)}/snapshot`, onLine, SNAPSHOT_IDLE_MS),
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
      let res: { revision: number; head: number; changes: FeedEntry<Change>[] };
      try {
        res = await cp.get(
          `${syncPath(sync)}/changes?after=${revision}&wait=${sync.pollWait}`,
          undefined,
          (sync.pollWait + 10) * 1000,
        );
      } catch (error) {
        if (!(error instanceof ControlPlaneError) || error.status !== 410) throw error;
        contact(sync);
        log(`the control plane no longer keeps the changes after revision ${revision}; loading a snapshot`);
        return { gone: true };
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

/** Follows the change stream until stopped: each round long-polls, applies what arrived, and backs off when down. */
export async function followChanges(
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
