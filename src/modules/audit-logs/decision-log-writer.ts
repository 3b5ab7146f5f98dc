import { Worker } from "node:worker_threads";
import { now } from "../../lib/time.ts";
import type { DecisionLogChunk } from "../../pdp/decision-log.ts";
import { chunkParameters, INSERT_DECISION_LOG_CHUNK } from "./audit-logs.repo.ts";

export interface SqliteDecisionLogWriter {
  /**
   * Stores a chunk on the writer's thread; resolves to the entries stored (0 when the environment is gone or the
   * chunk was stored before).
   */
  write(chunk: DecisionLogChunk): Promise<number>;
  close(): Promise<void>;
}

/**
 * The embedded PDP's decision log on SQLite: a connection on a thread of its own, so no insert runs on the event
 * loop that answers checks. It commits without waiting for the disk (`synchronous = OFF`): a power failure may
 * cost the last decisions, never an API write. It shares the file with the main connection under WAL, so while a
 * chunk is being written the main connection's writes wait for SQLite's one write lock (a chunk of 1,000
 * decisions takes about a millisecond).
 */
export function createSqliteDecisionLogWriter(file: string): SqliteDecisionLogWriter {
  const worker = new Worker(new URL("./decision-log-writer.worker.mjs", import.meta.url), {
    workerData: {
      file,
      pragmas: ["synchronous = OFF", "busy_timeout = 10000"],
      insertSql: INSERT_DECISION_LOG_CHUNK,
    },
  });
  // An idle writer does not keep the process alive; one with a batch in flight does.
  worker.unref();
  /** Each written chunk's callbacks, by message id; `changes` is the rows the insert added (0 or 1). */
  const pending = new Map<number, { resolve: (changes: number) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let failure: Error | undefined;
  const failAll = (error: Error) => {
    failure = error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  worker.on("message", (m: { id: number; changes?: number; error?: string }) => {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) worker.unref();
    if (m.error !== undefined) p?.reject(new Error(`decision log writer: ${m.error}`));
    else p?.resolve(m.changes ?? 0);
  });
  worker.on("error", (error) => failAll(new Error(`decision log writer thread failed: ${error.message}`)));
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      failAll(failure ?? new Error("decision log writer closed"));
      resolve();
    }),
  );
  return {
    write(chunk) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      return new Promise<number>((resolve, reject) => {
        pending.set(id, { resolve: (changes) => resolve(changes > 0 ? chunk.count : 0), reject });
        worker.ref();
        worker.postMessage({ id, parameters: chunkParameters(chunk, now()) });
      });
    },
    async close() {
      if (!failure) {
        worker.ref();
        worker.postMessage("close");
      }
      await exited;
    },
  };
}
