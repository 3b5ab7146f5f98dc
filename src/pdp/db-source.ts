import type { Store } from "../db/store.ts";
import { readChangesAfter } from "../changes/feed.ts";
import { readSnapshot } from "./snapshot.ts";
import type { FeedSource } from "./replica.ts";

/** Revisions read per round, so a replica far behind catches up in bounded steps. */
const REVISIONS_PER_ROUND = 500;

/** The embedded PDP reads the environment's feed straight from the database. */
export function databaseSource(store: Store, environmentId: string): FeedSource {
  return {
    snapshot: () => readSnapshot(store.db, store.dialect, environmentId),
    async changesAfter(revision) {
      const env = await store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", environmentId)
        .executeTakeFirst();
      const head = env ? Number(env.revision) : revision;
      const upTo = Math.min(head, revision + REVISIONS_PER_ROUND);
      if (upTo <= revision) return { changes: [], revision };
      const changes = await readChangesAfter(store.db, environmentId, revision, upTo);
      return { changes, revision: upTo };
    },
  };
}
