import { sql, type Insertable, type Selectable } from "kysely";
import { CHANGES_CHANNEL_SQL, TASK_CREATED_PAYLOAD } from "../changes/feed.ts";
import type { Db } from "../db/db.ts";
import type { Dialect } from "../db/store.ts";
import type { TasksTable } from "../db/types.ts";

export type TaskRow = Selectable<TasksTable>;
export type TaskStatus = "processing" | "success" | "failed";

export const insertTask = (db: Db, row: Insertable<TasksTable>) =>
  db.insertInto("tasks").values(row).execute();

/** PostgreSQL: tells every instance's LISTEN connection, at commit, that a task was created. */
export const notifyTaskCreated = (db: Db) =>
  sql`select pg_notify(${sql.raw(CHANGES_CHANNEL_SQL)}, ${TASK_CREATED_PAYLOAD})`.execute(db);

/** A task as its environment sees it: another environment's task id finds nothing. */
export const findTask = (
  db: Db,
  environmentId: string,
  id: string,
  type: string,
): Promise<TaskRow | undefined> =>
  db
    .selectFrom("tasks")
    .selectAll()
    .where("environment_id", "=", environmentId)
    .where("id", "=", id)
    .where("type", "=", type)
    .executeTakeFirst();

/**
 * Takes the oldest processing task whose lease is free or expired, in one statement: it becomes ours until
 * `leaseExpiresAt`, and counts one more attempt. PostgreSQL skips rows another worker is claiming at the same
 * moment (SKIP LOCKED); SQLite has one writer, so the statement alone is atomic.
 */
export function claimTask(
  db: Db,
  dialect: Dialect,
  owner: string,
  at: string,
  leaseExpiresAt: string,
): Promise<TaskRow | undefined> {
  let pick = db
    .selectFrom("tasks")
    .select("id")
    .where("status", "=", "processing")
    .where((eb) => eb.or([eb("lease_owner", "is", null), eb("lease_expires_at", "<", at)]))
    .orderBy("created_at")
    .orderBy("id")
    .limit(1);
  if (dialect === "postgres") pick = pick.forUpdate().skipLocked();
  return db
    .updateTable("tasks")
    .set((eb) => ({
      lease_owner: owner,
      lease_expires_at: leaseExpiresAt,
      attempts: eb("attempts", "+", 1),
      started_at: eb.fn.coalesce("started_at", eb.val(at)),
      updated_at: at,
    }))
    .where("id", "=", pick)
    .returningAll()
    .executeTakeFirst();
}

/** Every write of a worker names itself: once its lease is gone (taken over, finished) nothing changes. */
const ownedBy = (db: Db, id: string, owner: string) =>
  db
    .updateTable("tasks")
    .where("id", "=", id)
    .where("lease_owner", "=", owner)
    .where("status", "=", "processing");

export async function renewLease(
  db: Db,
  id: string,
  owner: string,
  at: string,
  leaseExpiresAt: string,
): Promise<boolean> {
  const result = await ownedBy(db, id, owner)
    .set({ lease_expires_at: leaseExpiresAt, updated_at: at })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function setProgress(
  db: Db,
  id: string,
  owner: string,
  progress: number,
  at: string,
): Promise<boolean> {
  const result = await ownedBy(db, id, owner).set({ progress, updated_at: at }).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export interface TaskOutcome {
  status: "success" | "failed";
  result: string | null;
  error: string | null;
}

export async function finishTask(
  db: Db,
  id: string,
  owner: string,
  outcome: TaskOutcome,
  at: string,
): Promise<boolean> {
  const result = await ownedBy(db, id, owner)
    .set({
      status: outcome.status,
      result: outcome.result,
      error: outcome.error,
      ...(outcome.status === "success" && { progress: 100 }),
      finished_at: at,
      updated_at: at,
    })
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives a task back without counting the attempt (a clean shutdown is not a crash). */
export async function releaseTask(db: Db, id: string, owner: string, at: string): Promise<boolean> {
  const result = await ownedBy(db, id, owner)
    .set((eb) => ({
      lease_owner: null,
      lease_expires_at: null,
      attempts: eb("attempts", "-", 1),
      updated_at: at,
    }))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function purgeFinishedTasks(db: Db, finishedBefore: string): Promise<number> {
  const result = await db
    .deleteFrom("tasks")
    .where("status", "<>", "processing")
    .where("finished_at", "<", finishedBefore)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Unfinished tasks: those a worker holds (running) and those waiting for one, for /metrics. */
export async function countOpenTasks(db: Db, at: string): Promise<{ running: number; waiting: number }> {
  const count = async (leased: boolean) => {
    let q = db
      .selectFrom("tasks")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("status", "=", "processing");
    q = leased
      ? q.where("lease_expires_at", ">", at)
      : q.where((eb) => eb.or([eb("lease_expires_at", "is", null), eb("lease_expires_at", "<=", at)]));
    return Number((await q.executeTakeFirstOrThrow()).n);
  };
  return { running: await count(true), waiting: await count(false) };
}
