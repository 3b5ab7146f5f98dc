import type { Db } from "../db/db.ts";
import type { ChangeNotifier } from "./feed.ts";

/** Wait rounds poll the database too, so a write committed by another instance is seen within this bound. */
const POLL_MS = 200;

/** The environment's revision now (0 when it is gone). */
export async function headOf(db: Db, environmentId: string): Promise<number> {
  const row = await db
    .selectFrom("environments")
    .select("revision")
    .where("id", "=", environmentId)
    .executeTakeFirst();
  return row ? Number(row.revision) : 0;
}

/**
 * Resolves once the environment's revision passes `after` (a commit in this process wakes it at once, another
 * instance's within POLL_MS), after `waitMs` at most, or when `signal` aborts.
 */
export async function waitForRevision(
  db: Db,
  notifier: ChangeNotifier,
  environmentId: string,
  after: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<void> {
  if (waitMs <= 0 || signal?.aborted || (await headOf(db, environmentId)) > after) return;
  await new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      unsubscribe();
      clearInterval(poll);
      clearTimeout(timer);
      signal?.removeEventListener("abort", finish);
      resolve();
    };
    const unsubscribe = notifier.subscribe((id, revision) => {
      if (id === environmentId && revision > after) finish();
    });
    const poll = setInterval(() => {
      void headOf(db, environmentId).then((head) => head > after && finish(), finish);
    }, POLL_MS);
    const timer = setTimeout(finish, waitMs);
    signal?.addEventListener("abort", finish);
  });
}
