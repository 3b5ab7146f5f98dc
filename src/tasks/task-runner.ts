import os from "node:os";
import { randomUUID } from "node:crypto";
import { runWithWriteContext, type WriteContext } from "../changes/context.ts";
import type { ChangeNotifier } from "../changes/feed.ts";
import { enqueueEvent } from "../changes/events.ts";
import type { Db } from "../db/db.ts";
import { AppError, errorBody } from "../lib/errors.ts";
import { now, toTimestamp } from "../lib/time.ts";
import {
  claimTask,
  finishTask,
  purgeFinishedTasks,
  releaseTask,
  renewLease,
  setProgress,
  type TaskOutcome,
  type TaskRow,
} from "./tasks.repo.ts";
import type { TasksService } from "./tasks.service.ts";
import type { TaskContext, TaskHandler } from "./task-types.ts";
import type { DatabaseOutage } from "../db/outage.ts";

/** Thrown into a handler whose task another worker has taken over: its work must not commit. */
export class LeaseLostError extends Error {
  constructor(taskId: string) {
    super(`task ${taskId} is no longer held by this worker`);
  }
}

class ShutdownSignal extends Error {}
class TimeLimitSignal extends Error {}

export interface TaskRunnerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface TaskRunnerOptions {
  /** Names this worker in `lease_owner`; default host:pid:random. */
  owner?: string;
  /** How long a claim holds without renewal (GATEHOUSE_TASK_LEASE_SECONDS). */
  leaseMs: number;
  /** default a third of the lease */
  renewMs?: number;
  /** How often an idle worker looks for work (a task created in this process wakes it at once); default 250 ms. */
  pollMs?: number;
  /**
   * How often it looks while `wakeSource` is listening (on PostgreSQL a task created by any instance wakes it by
   * NOTIFY): only for tasks whose worker died and whose lease expired; default 5 s.
   */
  notifiedPollMs?: number;
  /** A task running longer than this (from its first start) ends failed; default 30 minutes. */
  timeLimitMs?: number;
  /** A task whose worker stopped this many times without finishing it ends failed; default 3. */
  maxAttempts?: number;
  /** Finished tasks are deleted after this many days; 0 keeps them (GATEHOUSE_TASK_RETENTION_DAYS). */
  retentionDays: number;
  purgeIntervalMs?: number;
  /** How long stop() lets a handler roll back before giving its task up; default 10 s. */
  shutdownGraceMs?: number;
  notifier?: ChangeNotifier;
  log?: TaskRunnerLog;
  /** Database outages are logged once there rather than at every poll. */
  outage?: DatabaseOutage;
}

export interface TaskRunner {
  readonly owner: string;
  /** Starts the worker loop and the retention purge. */
  start(): void;
  /** Stops claiming, abandons the running task (it rolls back and is given back) and waits for the loop. */
  stop(): Promise<void>;
  /** Look for work now. */
  kick(): void;
  /** While `source` is listening, every created task kicks this worker (`kick`), so it polls only slowly. */
  wakeBy(source: { readonly listening: boolean }): void;
  /** Claims and runs at most one task; true when there was one. */
  runOnce(): Promise<boolean>;
  /** Deletes finished tasks older than the retention; returns how many. */
  purge(): Promise<number>;
}

const silentLog: TaskRunnerLog = { info() {}, warn() {}, error() {} };

const later = (ms: number) => toTimestamp(new Date(Date.now() + ms));
const duration = (ms: number) => (ms >= 60_000 ? `${ms / 60_000} minutes` : `${ms / 1000} seconds`);

/**
 * A worker that runs in every API instance. It claims one task at a time with a lease, renews the lease while the
 * handler works, and writes the outcome only while it still holds the lease; a task whose worker died is taken
 * over by any worker once the lease expires, and fails after `maxAttempts` such takeovers or past its time limit.
 */
export function createTaskRunner(tasks: TasksService, options: TaskRunnerOptions): TaskRunner {
  const { db, dialect, registry, events } = tasks;
  const owner = options.owner ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const { leaseMs, retentionDays } = options;
  const renewMs = options.renewMs ?? Math.max(10, Math.floor(leaseMs / 3));
  const pollMs = options.pollMs ?? 250;
  const notifiedPollMs = options.notifiedPollMs ?? 5_000;
  let wakeSource: { readonly listening: boolean } | undefined;
  const timeLimitMs = options.timeLimitMs ?? 30 * 60_000;
  const maxAttempts = options.maxAttempts ?? 3;
  const purgeIntervalMs = options.purgeIntervalMs ?? 10 * 60_000;
  const shutdownGraceMs = options.shutdownGraceMs ?? 10_000;
  const log = options.log ?? silentLog;

  let running = false;
  let loopDone: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let kicked = false;
  let current: AbortController | undefined;
  let purgeTimer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;

  const failure = (error: AppError): TaskOutcome => ({
    status: "failed",
    result: null,
    error: JSON.stringify(errorBody(error, tasks.publicUrl)),
  });

  /** Writes the outcome, and the `task.finished` webhook event with it; false when the lease was lost. */
  async function finishAnnounced(trx: Db, task: TaskRow, outcome: TaskOutcome): Promise<boolean> {
    if (!(await finishTask(trx, task.id, owner, outcome, now()))) return false;
    await enqueueEvent(
      trx,
      {
        organization_id: task.organization_id,
        project_id: task.project_id,
        environment_id: task.environment_id,
      },
      "task.finished",
      { task: { id: task.id, type: task.type, status: outcome.status } },
    );
    return true;
  }

  async function finish(task: TaskRow, outcome: TaskOutcome): Promise<void> {
    const done = await db.transaction().execute((trx) => finishAnnounced(trx, task, outcome));
    if (done) events.emitFinished(task.id);
  }

  const timeLimitError = () =>
    new AppError(
      "TIMEOUT",
      `the task did not finish within ${duration(timeLimitMs)} of its start and was stopped`,
    );

  /** Runs a claimed task's handler and writes its outcome, unless the task must fail before it runs. */
  async function execute(task: TaskRow): Promise<void> {
    const remainingMs = Date.parse(task.started_at ?? task.created_at) + timeLimitMs - Date.now();
    const checked = handlerOf(task, remainingMs);
    if (checked instanceof AppError) return finish(task, failure(checked));
    const params = JSON.parse(task.params) as unknown;
    const run = startRun(task, remainingMs);
    current = run.controller;
    const writes: WriteContext = { revisions: new Map() };
    const work = runWithWriteContext(writes, () => checked(handlerContext(task, params, run)));
    const succeeded = (result: unknown) => recordSuccess(task, run, writes, result);
    try {
      await succeeded(await Promise.race([work, run.aborted]));
    } catch (err) {
      const { signal } = run.controller;
      await recordStop(task, signal.aborted ? (signal.reason as unknown) : err, work, succeeded);
    } finally {
      run.end();
      current = undefined;
    }
  }

  /** The task's handler, or why the task fails without running: too many attempts, past its time, no handler. */
  function handlerOf(task: TaskRow, remainingMs: number): TaskHandler<unknown, unknown> | AppError {
    if (task.attempts > maxAttempts) {
      log.warn({ taskId: task.id, attempts: task.attempts - 1 }, "task abandoned too often; failing it");
      return new AppError(
        "UNEXPECTED_ERROR",
        `the task was interrupted ${maxAttempts} times (its worker stopped before finishing it) and was not retried again`,
      );
    }
    if (remainingMs <= 0) return timeLimitError();
    return (
      registry.get(task.type) ??
      new AppError("UNEXPECTED_ERROR", `no worker handles tasks of type '${task.type}'`)
    );
  }

  /**
   * A running task: its abort signal (lease lost, time limit, shutdown) also as a promise that rejects, and its
   * lease renewed until `end()`. `committed` turns true once the handler wrote its own outcome.
   */
  function startRun(task: TaskRow, remainingMs: number) {
    const controller = new AbortController();
    const aborted = new Promise<never>((_resolve, reject) =>
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason as Error), {
        once: true,
      }),
    );
    aborted.catch(() => {});
    const run = { controller, aborted, committed: false, end };
    const renewTimer = renewLeaseWhile(task, run);
    const limitTimer = setTimeout(() => controller.abort(new TimeLimitSignal()), remainingMs);
    function end() {
      clearInterval(renewTimer);
      clearTimeout(limitTimer);
    }
    return run;
  }
  type Run = ReturnType<typeof startRun>;

  /** Renews the lease every `renewMs`; a renewal the row refuses means another worker took the task: abort. */
  function renewLeaseWhile(task: TaskRow, run: Pick<Run, "controller" | "committed">): NodeJS.Timeout {
    let renewing = false;
    return setInterval(() => {
      if (renewing) return;
      renewing = true;
      renewLease(db, task.id, owner, now(), later(leaseMs))
        .then((held) => {
          // After our own outcome is written the row is no longer "processing": that is not a lost lease.
          if (!held && !run.committed && !run.controller.signal.aborted)
            run.controller.abort(new LeaseLostError(task.id));
        })
        .catch((err: unknown) => {
          if (!options.outage?.report(err, log))
            log.warn({ err, taskId: task.id }, "could not renew a task lease");
        })
        .finally(() => (renewing = false));
    }, renewMs);
  }

  /** What the handler sees: its task, params and signal, and the writes of progress and outcome under the lease. */
  function handlerContext(task: TaskRow, params: unknown, run: Run): TaskContext<unknown, unknown> {
    return {
      task,
      params,
      signal: run.controller.signal,
      async progress(percent) {
        const value = Math.max(0, Math.min(100, Math.round(percent)));
        await setProgress(db, task.id, owner, value, now());
      },
      async succeedWithin(trx, result) {
        const outcome: TaskOutcome = { status: "success", result: JSON.stringify(result), error: null };
        if (!(await finishAnnounced(trx, task, outcome))) throw new LeaseLostError(task.id);
        run.committed = true;
      },
    };
  }

  /** The handler returned: its outcome (unless it wrote it itself), then the PDPs hear of the task's writes. */
  async function recordSuccess(
    task: TaskRow,
    run: Run,
    writes: WriteContext,
    result: unknown,
  ): Promise<void> {
    if (run.committed) events.emitFinished(task.id);
    else await finish(task, { status: "success", result: JSON.stringify(result ?? null), error: null });
    for (const [environmentId, revision] of writes.revisions) {
      options.notifier?.notify(environmentId, revision);
    }
  }

  /** The handler threw or was stopped (`reason`): the outcome that says why, or the task given back at shutdown. */
  async function recordStop(
    task: TaskRow,
    reason: unknown,
    work: Promise<unknown>,
    succeeded: (result: unknown) => Promise<void>,
  ): Promise<void> {
    if (reason instanceof ShutdownSignal) {
      // Let the handler roll back (or finish, if it was past its last stop), then give the task back for
      // another worker, or this one after a restart.
      const settled = await Promise.race([
        work.then(
          (result) => ({ done: true, result }),
          () => ({ done: false, result: null }),
        ),
        new Promise<{ done: false; result: null }>((r) =>
          setTimeout(() => r({ done: false, result: null }), shutdownGraceMs),
        ),
      ]);
      if (settled.done) await succeeded(settled.result);
      else await releaseTask(db, task.id, owner, now());
    } else if (reason instanceof LeaseLostError) {
      log.warn({ taskId: task.id }, "lost the lease of a running task; another worker has it");
    } else if (reason instanceof TimeLimitSignal) {
      await finish(task, failure(timeLimitError()));
    } else if (reason instanceof AppError) {
      await finish(task, failure(reason));
    } else {
      log.error({ err: reason, taskId: task.id, type: task.type }, "task failed unexpectedly");
      await finish(
        task,
        failure(
          new AppError("UNEXPECTED_ERROR", "the task failed unexpectedly; the task id is in the server log"),
        ),
      );
    }
  }

  async function runOnce(): Promise<boolean> {
    const task = await claimTask(db, dialect, owner, now(), later(leaseMs));
    if (!task) return false;
    await execute(task);
    return true;
  }

  function idle(ms: number): Promise<void> {
    if (kicked) {
      kicked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });
  }

  async function loop(): Promise<void> {
    while (running) {
      let ran = false;
      let failed = false;
      try {
        ran = await runOnce();
      } catch (err) {
        failed = true;
        if (!options.outage?.report(err, log)) log.error({ err }, "task worker could not claim a task");
      }
      // A database that is away is retried every few seconds, not at the polling rate.
      if (running && !ran) await idle(failed ? Math.max(pollMs, 5_000) : idleMs());
    }
  }

  /** The poll's period: slow while notifications wake the worker, but never slower than a lease's expiry. */
  const idleMs = () => (wakeSource?.listening ? Math.max(pollMs, Math.min(notifiedPollMs, leaseMs)) : pollMs);

  async function purge(): Promise<number> {
    if (retentionDays <= 0) return 0;
    return purgeFinishedTasks(db, toTimestamp(new Date(Date.now() - retentionDays * 86_400_000)));
  }

  function kick(): void {
    kicked = true;
    wake?.();
  }

  return {
    owner,
    start() {
      if (running) return;
      running = true;
      unsubscribe = events.onCreated(kick);
      loopDone = loop();
      const purgeQuietly = () =>
        purge().catch((err: unknown) => {
          if (!options.outage?.report(err, log)) log.warn({ err }, "could not purge finished tasks");
        });
      void purgeQuietly();
      purgeTimer = setInterval(purgeQuietly, purgeIntervalMs);
      purgeTimer.unref();
    },
    async stop() {
      if (!running) return;
      running = false;
      unsubscribe?.();
      clearInterval(purgeTimer);
      current?.abort(new ShutdownSignal());
      wake?.();
      await loopDone;
    },
    kick,
    wakeBy(source) {
      wakeSource = source;
    },
    runOnce,
    purge,
  };
}
