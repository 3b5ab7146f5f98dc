import { Readable } from "node:stream";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { feedBounds, readFeedAfter, revisionGone, type ChangeNotifier } from "../../changes/feed.ts";
import { publicChanges, type PublicChange } from "../../changes/events.ts";
import { headOf, waitForRevision } from "../../changes/wait.ts";
import { AppError, invalid } from "../../lib/errors.ts";
import type { EnvScope } from "../../domain/path-scope.ts";

/** Revisions read per answer (long poll) or per round (SSE), so a reader far behind catches up in bounded steps. */
const REVISIONS_PER_PAGE = 100;
/** An idle SSE stream sends a comment this often, so proxies keep it open and a dead client is noticed. */
const HEARTBEAT_MS = 15_000;

export interface ChangePage {
  changes: PublicChange[];
  revision: number;
  head: number;
}

/** The environment's changes as a public stream: pages (long poll) or Server-Sent Events, one event per revision. */
export function createChangeStreamService(deps: { db: Kysely<Database>; notifier: ChangeNotifier }) {
  const { db, notifier } = deps;

  /** 422 past the head, 410 before the revisions whose changes are all kept (the environment's row says which). */
  async function checkAfter(environmentId: string, after: number): Promise<void> {
    const bounds = (await feedBounds(db, environmentId)) ?? { head: 0, keptAfter: 0 };
    if (after > bounds.head) {
      throw invalid(`'after' is past the environment's revision (${bounds.head})`, ["querystring", "after"]);
    }
    if (after < bounds.keptAfter) throw revisionGone(after, bounds);
  }

  /** The next page after `after`; 410 when a purge removed its changes since `after` was checked. */
  async function read(environmentId: string, after: number): Promise<ChangePage> {
    const feed = await readFeedAfter(db, environmentId, after, REVISIONS_PER_PAGE);
    if (!feed) return { changes: [], revision: after, head: after };
    if (feed.gone) throw revisionGone(after, feed);
    const { entries, head } = feed;
    const changes: PublicChange[] = [];
    for (let i = 0; i < entries.length;) {
      const first = entries[i]!;
      let j = i;
      while (j < entries.length && entries[j]!.revision === first.revision) j++;
      changes.push(...publicChanges(first.revision, first.created_at, entries.slice(i, j)));
      i = j;
    }
    return { changes, revision: feed.revision, head };
  }

  /** SSE text of a page: one `revision` event per revision, its id the revision (the `Last-Event-ID` to resume). */
  function events(page: ChangePage): string {
    let out = "";
    for (let i = 0; i < page.changes.length;) {
      const revision = page.changes[i]!.revision;
      let j = i;
      while (j < page.changes.length && page.changes[j]!.revision === revision) j++;
      const data = JSON.stringify({ revision, changes: page.changes.slice(i, j) });
      out += `id: ${revision}\nevent: revision\ndata: ${data}\n\n`;
      i = j;
    }
    return out;
  }

  return {
    checkAfter: ({ environment }: EnvScope, after: number) => checkAfter(environment.id, after),

    /** One page after `after`, waiting up to `waitSeconds` for a change when there is none. */
    async page({ environment }: EnvScope, after: number, waitSeconds: number): Promise<ChangePage> {
      await checkAfter(environment.id, after);
      await waitForRevision(db, notifier, environment.id, after, waitSeconds * 1000);
      return read(environment.id, after);
    },

    /**
     * An endless SSE stream from `after` (checked first), until `signal` aborts. A stream that falls behind the
     * retention ends; its client reconnects with `Last-Event-ID` and gets the 410.
     */
    stream({ environment }: EnvScope, after: number, signal: AbortSignal): Readable {
      async function* generate() {
        let cursor = after;
        yield `retry: 1000\n\n`;
        while (!signal.aborted) {
          const page = await read(environment.id, cursor).catch((error: unknown) => {
            if (error instanceof AppError && error.code === "REVISION_GONE") return undefined;
            throw error;
          });
          if (!page) return;
          if (page.revision > cursor) {
            cursor = page.revision;
            yield events(page);
            continue;
          }
          await waitForRevision(db, notifier, environment.id, cursor, HEARTBEAT_MS, signal);
          if ((await headOf(db, environment.id)) <= cursor) yield `: idle\n\n`;
        }
      }
      return Readable.from(generate(), { objectMode: false });
    },
  };
}
