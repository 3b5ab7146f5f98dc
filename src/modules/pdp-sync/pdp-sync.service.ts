import type { Store } from "../../db/store.ts";
import { feedBounds, revisionGone, type ChangeNotifier } from "../../changes/feed.ts";
import { waitForRevision } from "../../changes/wait.ts";
import { databaseFeed } from "../../domain/pdp-storage.ts";
import { streamSnapshot } from "../../domain/snapshot-stream.ts";
import type { EnvScope } from "../../domain/path-scope.ts";

/**
 * What a standalone PDP follows: a snapshot at revision R, then the ordered changes after R, long-polled so a
 * change reaches the PDP as soon as it commits.
 */
export function createPdpSyncService(deps: { store: Store; notifier: ChangeNotifier }) {
  const { store, notifier } = deps;

  return {
    /** NDJSON written as it is read from the database (src/domain/snapshot-stream.ts). */
    snapshot({ environment }: EnvScope) {
      return streamSnapshot(store, {
        organization_id: environment.organization_id,
        project_id: environment.project_id,
        environment_id: environment.id,
      });
    },

    /** 410 when the feed no longer keeps every change after `after`: the PDP loads a snapshot instead. */
    async changes({ environment }: EnvScope, after: number, waitSeconds: number) {
      await waitForRevision(store.db, notifier, environment.id, after, waitSeconds * 1000);
      const round = await databaseFeed(store, environment.id).changesAfter(after);
      const bounds = await feedBounds(store.db, environment.id);
      if ("gone" in round) throw revisionGone(after, bounds ?? { head: after, keptAfter: after });
      return { revision: round.revision, head: bounds?.head ?? round.revision, changes: round.changes };
    },
  };
}

export type PdpSyncService = ReturnType<typeof createPdpSyncService>;
