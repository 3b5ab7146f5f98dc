import type { Db } from "../../src/db/db.ts";
import {
  changesOf,
  readFeedAfter,
  type FeedEntry,
  type FeedRecord,
  type StoredChange,
} from "../../src/changes/feed.ts";

/** Feed entries as single changes, numbered in order within each revision. */
function spreadEntries<C extends FeedRecord>(entries: FeedEntry<C>[]): StoredChange<C>[] {
  const out: StoredChange<C>[] = [];
  let revision = -1;
  let seq = 0;
  for (const entry of entries) {
    if (entry.revision !== revision) [revision, seq] = [entry.revision, 0];
    for (const change of changesOf(entry)) {
      out.push({ ...change, revision, seq: seq++, created_at: entry.created_at });
    }
  }
  return out;
}

/** Every change of revisions afterRevision < r <= upToRevision, one by one: batches spread into their items. */
export async function readChangesAfter<C extends FeedRecord = FeedRecord>(
  db: Db,
  environmentId: string,
  afterRevision: number,
  upToRevision: number,
): Promise<StoredChange<C>[]> {
  const read = await readFeedAfter<C>(db, environmentId, afterRevision, upToRevision - afterRevision);
  return spreadEntries(read?.entries ?? []);
}
