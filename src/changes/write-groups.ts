import { AsyncResource } from "node:async_hooks";
import { CompiledQuery, type Kysely, type Transaction } from "kysely";
import type { Database } from "../db/types.ts";
import { recordRevision } from "./context.ts";
import { appendChanges, appendRevisions, type FeedRecord } from "./feed.ts";

/**
 * What a write unit returns: its result, and the change records to append as its own revision (none: no revision).
 */
export interface Written<T> {
  result: T;
  records: readonly FeedRecord[] | undefined;
}

/** A write to one environment: it runs in a transaction it does not own, and says what it changed. */
export type WriteUnit<T> = (trx: Transaction<Database>) => Promise<Written<T>>;

/**
 * Units one transaction runs at most: each holds a savepoint (a subtransaction), and PostgreSQL keeps the first 64
 * of a transaction's subtransactions in shared memory, past which every snapshot of every session costs more.
 */
const MAX_UNITS = 32;

interface Queued {
  run: WriteUnit<unknown>;
  /** The caller's async context: its unit runs, and its revision is recorded, there. */
  scope: AsyncResource;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/** An environment's waiting units, and whether a lane is taking them. */
interface Queue {
  units: Queued[];
  taking: boolean;
}

interface Done {
  unit: Queued;
  written: Written<unknown>;
}

/** A unit's savepoint statements, compiled once: every grouped write runs the first. */
const SAVEPOINT = CompiledQuery.raw("savepoint write_unit");
const ROLLBACK_TO_SAVEPOINT = CompiledQuery.raw("rollback to savepoint write_unit");

/** Created at start-up, outside every request: the lanes' own statements belong to no caller. */
const ROOT = new AsyncResource("gatehouse.write-group");

/**
 * Group commit of one process's writes to one environment. A write holds the environment's row (its revision)
 * from its change records' insert to the end of COMMIT, a round trip and a WAL flush; one write after another,
 * that capped an environment at about 700 writes a second on PostgreSQL. Here concurrent writes to the same
 * environment queue up; a lane (one transaction) takes them in order and runs each inside a savepoint of its own
 * (a unit that fails rolls back to it and gets its own error at once; the others go on), then appends every unit's
 * records as consecutive revisions in one statement and commits once: one lock hold and one WAL flush for the
 * group. One lane takes units at a time (two would each hold their units' rows until they commit, and wait for
 * each other's); the next opens when it stops taking, and runs while it commits. Units run in their callers' async
 * contexts. A unit is answered once its lane has committed; when the append or the COMMIT fails, every unit of the
 * lane gets that error (none had been acknowledged). Between environments, processes and other writers, the
 * environment's row orders the commits as before; lanes of two processes whose units touch the same rows in
 * opposite orders may deadlock, and PostgreSQL then fails one unit (503), as it would two such transactions.
 */
class WriteGroups {
  readonly #queues = new Map<string, Queue>();
  constructor(private readonly db: Kysely<Database>) {}

  run<T>(environmentId: string, unit: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let queue = this.#queues.get(environmentId);
      if (!queue) this.#queues.set(environmentId, (queue = { units: [], taking: false }));
      queue.units.push({
        run: unit,
        scope: new AsyncResource("gatehouse.write-unit"),
        resolve: resolve as (result: unknown) => void,
        reject,
      });
      this.#open(environmentId);
    });
  }

  #open(environmentId: string): void {
    const queue = this.#queues.get(environmentId);
    if (!queue) return;
    if (queue.units.length === 0) {
      if (!queue.taking) this.#queues.delete(environmentId);
      return;
    }
    if (queue.taking) return;
    queue.taking = true;
    void ROOT.runInAsyncScope(() => this.#lane(environmentId, queue));
  }

  async #lane(environmentId: string, queue: Queue): Promise<void> {
    const done: Done[] = [];
    let taking = true;
    // Once this lane takes no more units, the next may open for those that come meanwhile, and run them while this
    // one commits.
    const stopTaking = () => {
      if (!taking) return;
      taking = false;
      queue.taking = false;
      this.#open(environmentId);
    };
    let revisions: number[] = [];
    let begun = false;
    try {
      await this.db.transaction().execute(async (trx) => {
        begun = true;
        for (let taken = 0; taken < MAX_UNITS; taken++) {
          const unit = queue.units.shift();
          if (!unit) break;
          try {
            await trx.executeQuery(SAVEPOINT);
            done.push({ unit, written: await unit.scope.runInAsyncScope(() => unit.run(trx)) });
          } catch (error) {
            // The failed unit changed nothing once rolled back to its savepoint. When even that fails, the
            // transaction is lost: the unit still gets its own error, and the lane fails below.
            try {
              await trx.executeQuery(ROLLBACK_TO_SAVEPOINT);
            } finally {
              unit.reject(error);
            }
          }
        }
        stopTaking();
        const appending = done.filter((d) => d.written.records !== undefined);
        if (appending.length === 0) return;
        const appended = await appendRevisions(
          trx,
          environmentId,
          appending.map((d) => d.written.records ?? []),
        );
        revisions = done.map((d) => (d.written.records === undefined ? 0 : (appended.shift() ?? 0)));
      });
    } catch (error) {
      // A transaction that could not even begin (the database is down) fails the units waiting for it, as their
      // own transactions would have failed, rather than opening lane after lane for them.
      if (!begun) for (const unit of queue.units.splice(0)) unit.reject(error);
      stopTaking();
      for (const { unit } of done) unit.reject(error);
      return;
    }
    for (const [i, { unit, written }] of done.entries()) {
      const revision = revisions[i] ?? 0;
      if (revision > 0) unit.scope.runInAsyncScope(() => recordRevision(environmentId, revision));
      unit.resolve(written.result);
    }
  }
}

const groups = new WeakMap<Kysely<Database>, WriteGroups>();

/**
 * Runs one write to an environment and appends its change records as the environment's next revision, in the same
 * transaction: grouped with the process's concurrent writes to that environment (WriteGroups), or, `alone`, in a
 * transaction of its own (a bulk write, which would hold up a group's other units for its whole run).
 */
export function writeToEnvironment<T>(
  db: Kysely<Database>,
  environmentId: string,
  unit: WriteUnit<T>,
  options: { alone?: boolean } = {},
): Promise<T> {
  if (options.alone) {
    return db.transaction().execute(async (trx) => {
      const { result, records } = await unit(trx);
      if (records !== undefined) await appendChanges(trx, environmentId, records);
      return result;
    });
  }
  let group = groups.get(db);
  if (!group) groups.set(db, (group = new WriteGroups(db)));
  return group.run(environmentId, unit);
}
