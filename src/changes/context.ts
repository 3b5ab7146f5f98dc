import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The revisions one unit of work (a request, a task) wrote, collected as appendChanges runs, so the caller can
 * announce them after commit and put them on the response without every service passing them around.
 */
export interface WriteContext {
  revisions: Map<string, number>;
}

const storage = new AsyncLocalStorage<WriteContext>();

export const runWithWriteContext = <T>(context: WriteContext, fn: () => T): T => storage.run(context, fn);
export const enterWriteContext = (context: WriteContext): void => storage.enterWith(context);

export function recordRevision(environmentId: string, revision: number): void {
  const context = storage.getStore();
  if (!context) return;
  const previous = context.revisions.get(environmentId) ?? 0;
  if (revision > previous) context.revisions.set(environmentId, revision);
}
