import { newId } from "../lib/ids.ts";
import { toTimestamp } from "../lib/time.ts";

export type DecisionQuery =
  "check" | "bulk_check" | "get_user_permissions" | "get_authorized_users" | "all_tenants" | "user_tenants";

/** One decision as the PDP records it; shipped to the control plane in batches. */
export interface DecisionLogEntry {
  id: string;
  timestamp: string;
  organization_id: string;
  project_id: string;
  environment_id: string;
  pdp_id: string;
  query: DecisionQuery;
  user_key: string | null;
  action: string | null;
  resource_type: string | null;
  resource_key: string | null;
  tenant: string | null;
  decision: boolean | null;
  reason: unknown;
  input: unknown;
  result: unknown;
  revision: number;
  latency_us: number;
}

export type DecisionLogSink = (entries: DecisionLogEntry[]) => Promise<void>;

export interface DecisionLogger {
  record(entry: Omit<DecisionLogEntry, "id" | "timestamp">): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Entries dropped because the sink kept failing or the queue was full. */
  readonly dropped: number;
}

export interface DecisionLoggerOptions {
  sink: DecisionLogSink;
  flushIntervalMs?: number;
  maxBatch?: number;
  /** Past this many queued entries new ones are dropped (counted), so a dead sink cannot eat the memory. */
  maxQueue?: number;
  onError?: (error: unknown) => void;
}

/**
 * Recording is a push onto an array; a timer ships batches. A check never waits for the log, and a failing sink
 * costs log entries (counted in `dropped`), never decisions.
 */
export function createDecisionLogger(options: DecisionLoggerOptions): DecisionLogger {
  const flushIntervalMs = options.flushIntervalMs ?? 200;
  const maxBatch = options.maxBatch ?? 1000;
  const maxQueue = options.maxQueue ?? 200_000;
  let queue: DecisionLogEntry[] = [];
  let dropped = 0;
  let flushing: Promise<void> | undefined;
  let failures = 0;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      try {
        await options.sink(batch);
        queue = queue.slice(batch.length);
        failures = 0;
      } catch (error) {
        options.onError?.(error);
        failures += 1;
        // Retried on the next ticks; after five failures in a row the batch is given up.
        if (failures >= 5) {
          dropped += batch.length;
          queue = queue.slice(batch.length);
          failures = 0;
        }
        return;
      }
    }
  }

  const flush = (): Promise<void> => {
    flushing ??= drain().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };

  const timer = setInterval(() => void flush(), flushIntervalMs);
  timer.unref();

  return {
    record(entry) {
      if (queue.length >= maxQueue) {
        dropped += 1;
        return;
      }
      queue.push({ id: newId(), timestamp: toTimestamp(new Date()), ...entry });
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
      if (queue.length > 0) await flush();
    },
    get dropped() {
      return dropped;
    },
  };
}

/** For `GATEHOUSE_DECISION_LOG=off`: records nothing (the benchmark compares both). */
export const disabledDecisionLogger: DecisionLogger = {
  record() {},
  flush: async () => {},
  close: async () => {},
  dropped: 0,
};
