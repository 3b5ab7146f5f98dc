import type { Db } from "../db/db.ts";
import type { TaskRow } from "./tasks.repo.ts";

/**
 * Task types and their parameter and result shapes. Modules that define a task type add it here by
 * declaration merging (`declare module ".../task-types.ts" { interface TaskTypes { ... } }`), so creating a task
 * and registering its handler are type-checked against each other.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TaskTypes {}

export type TaskType = keyof TaskTypes & string;
export type TaskParams<K extends TaskType> = TaskTypes[K] extends { params: infer P } ? P : never;
export type TaskResult<K extends TaskType> = TaskTypes[K] extends { result: infer R } ? R : never;

export interface TaskContext<P, R> {
  readonly task: TaskRow;
  readonly params: P;
  /** Aborted on shutdown, on the time limit and when the lease was lost: stop at the next safe point. */
  readonly signal: AbortSignal;
  /** Best effort, 0 to 100; written outside any transaction of the handler. */
  progress(percent: number): Promise<void>;
  /**
   * Marks the task successful inside the handler's own transaction, so the work and its outcome commit together
   * (a retry never repeats committed work). Throws when this worker no longer holds the task.
   */
  succeedWithin(trx: Db, result: R): Promise<void>;
}

export type TaskHandler<P, R> = (context: TaskContext<P, R>) => Promise<R>;

/** Handlers by task type. */
export class TaskRegistry {
  private readonly handlers = new Map<string, TaskHandler<unknown, unknown>>();

  register<K extends TaskType>(type: K, handler: TaskHandler<TaskParams<K>, TaskResult<K>>): void {
    if (this.handlers.has(type)) throw new Error(`task type '${type}' is already registered`);
    this.handlers.set(type, handler as TaskHandler<unknown, unknown>);
  }

  get(type: string): TaskHandler<unknown, unknown> | undefined {
    return this.handlers.get(type);
  }
}
