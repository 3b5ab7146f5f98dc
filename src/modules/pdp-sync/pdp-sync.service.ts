import type { Store } from "../../db/store.ts";
import type { ChangeNotifier } from "../../changes/feed.ts";
import { databaseFeed } from "../../domain/pdp-storage.ts";
import { streamSnapshot } from "../../domain/snapshot-stream.ts";
import type { EnvScope } from "../../domain/path-scope.ts";

/** Wait rounds poll the database too, so a write committed by another instance is seen within this bound. */
const POLL_MS = 200;

/**
 * What a standalone PDP follows: a snapshot at revision R, then the ordered changes after R, long-polled so a
 * change reaches the PDP as soon as it commits.
 */
export function createPdpSyncService(deps: { store: Store; notifier: ChangeNotifier }) {
  const { store, notifier } = deps;

  async function headOf(environmentId: string): Promise<number> {
    const row = await store.db
      .selectFrom("environments")
      .select("revision")
      .where("id", "=", environmentId)
      .executeTakeFirst();
    return row ? Number(row.revision) : 0;
  }

  async function waitForChange(environmentId: string, after: number, waitMs: number): Promise<void> {
    if (waitMs <= 0 || (await headOf(environmentId)) > after) return;
    await new Promise<void>((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        unsubscribe();
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      };
      const unsubscribe = notifier.subscribe((id, revision) => {
        if (id === environmentId && revision > after) finish();
      });
      const poll = setInterval(() => {
        void headOf(environmentId).then((head) => head > after && finish(), finish);
      }, POLL_MS);
      const timer = setTimeout(finish, waitMs);
    });
  }

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
      await waitForChange(environment.id, after, waitSeconds * 1000);
      const { changes, revision } = await databaseFeed(store, environment.id).changesAfter(after);
      return { revision, head: await headOf(environment.id), changes };
    },
  };
}

export type PdpSyncService = ReturnType<typeof createPdpSyncService>;
