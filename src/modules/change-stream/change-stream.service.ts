import { Readable } from "node:stream";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import { readFeedAfter, type ChangeNotifier } from "../../changes/feed.ts";
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

  /** 422 past the head, 410 before the oldest revision whose changes are all kept. */
  async function checkAfter(environmentId: string, after: number): Promise<number> {
    const head = await headOf(db, environmentId);
    if (after > head) {
      throw invalid(`'after' is past the environment's revision (${head})`, ["querystring", "after"]);
    }
    const oldest = await db
      .selectFrom("changes")
      .select((eb) => eb.fn.min("revision").as("revision"))
      .where("environment_id", "=", environmentId)
      .executeTakeFirst();
    const keptAfter = oldest?.revision == null ? head : Number(oldest.revision) - 1;
    if (after < keptAfter) {
      throw new AppError(
        "REVISION_GONE",
        `the changes after revision ${after} are no longer kept (the oldest kept follow revision ${keptAfter}); ` +
          `read the current state and follow from revision ${head}`,
        { revision: head, kept_after: keptAfter },
      );
    }
    return head;
  }

  async function read(environmentId: string, after: number, head: number): Promise<ChangePage> {
    const upTo = Math.min(head, after + REVISIONS_PER_PAGE);
    if (upTo <= after) return { changes: [], revision: after, head };
    const entries = await readFeedAfter(db, environmentId, after, upTo);
    const changes: PublicChange[] = [];
    for (let i = 0; i < entries.length;) {
      const first = entries[i]!;
      let j = i;
      while (j < entries.length && entries[j]!.revision === first.revision) j++;
      changes.push(...publicChanges(first.revision, first.created_at, entries.slice(i, j)));
      i = j;
    }
    return { changes, revision: upTo, head };
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
      return read(environment.id, after, await headOf(db, environment.id));
    },

    /** An endless SSE stream from `after` (checked first), until `signal` aborts. */
    stream({ environment }: EnvScope, after: number, signal: AbortSignal): Readable {
      async function* generate() {
        let cursor = after;
        yield `retry: 1000\n\n`;
        while (!signal.aborted) {
          const page = await read(environment.id, cursor, await headOf(db, environment.id));
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
