import type { Store } from "../../db/store.ts";
import type { ChangeNotifier } from "../../changes/feed.ts";
import { headOf, waitForRevision } from "../../changes/wait.ts";
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

    async changes({ environment }: EnvScope, after: number, waitSeconds: number) {
      await waitForRevision(store.db, notifier, environment.id, after, waitSeconds * 1000);
      const { changes, revision } = await databaseFeed(store, environment.id).changesAfter(after);
      return { revision, head: await headOf(store.db, environment.id), changes };
    },
  };
}

export type PdpSyncService = ReturnType<typeof createPdpSyncService>;
