import type { Store } from "../db/store.ts";
import { isDatabaseUnavailable } from "../db/errors.ts";
import { readFeedAfter } from "../changes/feed.ts";
import type { Change } from "../pdp/engine/types.ts";
import type { DecisionLogChunk, FeedSource, PdpStorage } from "../pdp/storage.ts";
import { openDatabaseDecisionSink } from "./decision-log/database-sink.ts";
import { findEnvironment } from "./environment-records.ts";
import { findProject } from "./project-records.ts";
import { findPrincipal } from "./api-key-records.ts";
import { snapshotPages } from "./snapshot-stream.ts";

/** Revisions read per round, so a replica far behind catches up in bounded steps. */
const REVISIONS_PER_ROUND = 500;

/**
 * The embedded PDP's storage: the control plane's own database. `keyUsed` is told of every key the PDP looks up
 * (it caches them for seconds, so a key in use is looked up again well within a minute).
 */
export function databasePdpStorage(
  store: Store,
  keyUsed?: (keyId: string) => void,
  exported?: (chunk: DecisionLogChunk) => void,
): PdpStorage {
  return {
    outage: store.outage,
    isUnavailable: isDatabaseUnavailable,
    async findKey(secret) {
      const principal = await findPrincipal(store.db, secret);
      if (principal) keyUsed?.(principal.keyId);
      return principal;
    },
    async findEnvironment(organizationId, projectRef, environmentRef) {
      const project = await findProject(store.db, organizationId, projectRef);
      const env = project ? await findEnvironment(store.db, project.id, environmentRef) : undefined;
      return project && env ? { id: env.id, projectId: project.id } : undefined;
    },
    feed: (environmentId) => databaseFeed(store, environmentId),
    openDecisionSink: () => openDatabaseDecisionSink(store, exported),
  };
}

/** One environment's feed read straight from the database (the embedded PDP; the sync routes serve the same). */
export function databaseFeed(store: Store, environmentId: string): FeedSource {
  return {
    snapshot: () => snapshotPages(store, environmentId),
    async changesAfter(revision) {
      const read = await readFeedAfter<Change>(store.db, environmentId, revision, REVISIONS_PER_ROUND);
      if (!read) return { changes: [], revision };
      return read.gone ? { gone: true } : { changes: read.entries, revision: read.revision };
    },
  };
}
