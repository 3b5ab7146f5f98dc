import { changesOf, type FeedEntry } from "../../../changes/feed.ts";
import type { DecisionSpool } from "../decision-spool.ts";
import type { Replica } from "../replica.ts";

export interface EnvironmentIds {
  organization_id: string;
  project_id: string;
  environment_id: string;
}

/**
 * What the standalone PDP knows of its environment and of the change stream; the feed, the disk state, the
 * compaction and the status read and write it.
 */
export interface SyncState {
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

export function newSyncState(): SyncState {
  return {
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
}

/** The changes in feed entries (a batch counts its items). */
export const countChanges = (entries: FeedEntry[]) =>
  entries.reduce((n, entry) => n + changesOf(entry).length, 0);

/** The control plane's path of this PDP's environment under `/v2/pdp-sync`. */
export const syncPath = (sync: SyncState) =>
  `/v2/pdp-sync/${sync.ids?.project_id}/${sync.ids?.environment_id}`;

/** The control plane answered: note when, and let the spool ship again if it was away. */
export function contact(sync: SyncState): void {
  sync.lastContact = Date.now();
  if (sync.unreachable) {
    sync.unreachable = false;
    sync.spool?.wake();
  }
}

/** What /ready and /metrics report: revision, lag, revisions behind, the control plane link and the spool. */
export function syncStatus(sync: SyncState, replica: Replica) {
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
