import type { Kysely } from "kysely";
import type { Db } from "../db/db.ts";
import type { Dialect } from "../db/store.ts";
import type { Database } from "../db/types.ts";
import { notFound, type ErrorBody } from "../lib/errors.ts";
import { isUuid, newId } from "../lib/ids.ts";
import { fromJson } from "../lib/json.ts";
import { now } from "../lib/time.ts";
import { TaskRegistry, type TaskParams, type TaskType } from "./task-types.ts";
import { findTask, insertTask, notifyTaskCreated, type TaskRow, type TaskStatus } from "./tasks.repo.ts";

/** Longest `wait` a request may ask for, in seconds (Permit documents the same bound). */
export const MAX_WAIT_SECONDS = 60;
/** How often a waiting request re-reads its task, so a task finished by another instance is seen too. */
const WAIT_POLL_MS = 100;

/** The background task record of the specification, plus `progress`. */
export interface TaskRecord<R> {
  task_id: string;
  status: TaskStatus;
  progress: number;
  result: R | null;
  error: ErrorBody | null;
}

export function taskRecord<R>(row: TaskRow): TaskRecord<R> {
  const status = row.status as TaskStatus;
  return {
    task_id: row.id,
    status,
    progress: row.progress,
    result: status === "success" ? fromJson<R>(row.result) : null,
    error: status === "failed" ? fromJson<ErrorBody>(row.error) : null,
  };
}

/** In-process signals: a task was created here (wake the worker), a task finished here (wake its waiters). */
export class TaskEvents {
  private readonly created = new Set<() => void>();
  private readonly finished = new Map<string, Set<() => void>>();

  onCreated(listener: () => void): () => void {
    this.created.add(listener);
    return () => this.created.delete(listener);
  }

  emitCreated(): void {
    for (const listener of this.created) listener();
  }

  onFinished(taskId: string, listener: () => void): () => void {
    let set = this.finished.get(taskId);
    if (!set) this.finished.set(taskId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.finished.delete(taskId);
    };
  }

  emitFinished(taskId: string): void {
    for (const listener of this.finished.get(taskId) ?? []) listener();
  }
}

export interface NewTask<K extends TaskType> {
  type: K;
  params: TaskParams<K>;
  organizationId: string;
  projectId: string;
  environmentId: string;
}

/** Creating, reading and waiting for tasks; the workers that run them are in task-runner.ts. */
export function createTasksService(deps: { db: Kysely<Database>; dialect: Dialect; publicUrl: string }) {
  const { db } = deps;
  const registry = new TaskRegistry();
  const events = new TaskEvents();
  const stopWaiting = new Set<() => void>();
  let closed = false;

  /** Writes a task row with the caller's transaction (or the database); call `announce()` after commit. */
  async function insert<K extends TaskType>(trx: Db, task: NewTask<K>): Promise<TaskRow> {
    const at = now();
    const row: TaskRow = {
      id: newId(),
      organization_id: task.organizationId,
      project_id: task.projectId,
      environment_id: task.environmentId,
      type: task.type,
      params: JSON.stringify(task.params),
      status: "processing",
      result: null,
      error: null,
      progress: 0,
      attempts: 0,
      lease_owner: null,
      lease_expires_at: null,
      created_at: at,
      started_at: null,
      finished_at: null,
      updated_at: at,
    };
    await insertTask(trx, row);
    // Every instance's worker hears of it at commit (their LISTEN connections), not at their next poll.
    if (deps.dialect === "postgres") await notifyTaskCreated(trx);
    return row;
  }

  async function read(environmentId: string, taskId: string, type: string): Promise<TaskRow> {
    const row = isUuid(taskId) ? await findTask(db, environmentId, taskId.toLowerCase(), type) : undefined;
    if (!row) throw notFound("task", taskId);
    return row;
  }

  /** Resolves on the task finishing (here or elsewhere), the deadline, or shutdown; whichever comes first. */
  function pause(taskId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const off = events.onFinished(taskId, done);
      stopWaiting.add(done);
      function done() {
        clearTimeout(timer);
        off();
        stopWaiting.delete(done);
        resolve();
      }
    });
  }

  return {
    db,
    dialect: deps.dialect,
    publicUrl: deps.publicUrl,
    registry,
    events,
    insert,

    /** Creates a task in its own statement and wakes this process's worker. */
    async submit<K extends TaskType>(task: NewTask<K>): Promise<TaskRow> {
      const row = await insert(db, task);
      events.emitCreated();
      return row;
    },

    announce(): void {
      events.emitCreated();
    },

    read,

    /**
     * The task after at most `seconds`: at once when it has finished or `seconds` is 0, otherwise as soon as it
     * finishes. Polls the row, so a task run by another instance is seen as well.
     */
    async wait(environmentId: string, taskId: string, type: string, seconds: number): Promise<TaskRow> {
      const deadline = Date.now() + seconds * 1000;
      for (;;) {
        const row = await read(environmentId, taskId, type);
        const left = deadline - Date.now();
        if (row.status !== "processing" || left <= 0 || closed) return row;
        await pause(row.id, Math.min(WAIT_POLL_MS, left));
      }
    },

    /** Answers every waiting request with the task as it is now (the server is shutting down). */
    close(): void {
      closed = true;
      for (const done of [...stopWaiting]) done();
    },
  };
}

export type TasksService = ReturnType<typeof createTasksService>;
