import { randomBytes } from "node:crypto";
import { toTimestamp } from "../lib/time.ts";

export type DecisionQuery =
  "check" | "bulk_check" | "get_user_permissions" | "get_authorized_users" | "all_tenants" | "user_tenants";

/**
 * One decision as the PDP records it; shipped to the control plane in batches. The organization and project are
 * the environment's, filled in where the entry is stored.
 */
export interface DecisionLogEntry {
  id: string;
  timestamp: string;
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
  /** The request, when it says more than the user, action, resource and tenant fields (null otherwise). */
  input: unknown;
  /** The answer of a query that is not a single check; null for checks, whose answer is `decision`. */
  result: unknown;
  revision: number;
  latency_us: number;
}

/** The environment a decision was made in. */
export interface DecisionSource {
  environmentId: string;
}

/** What a PDP route knows of one decision; the logger adds the id, the time, the environment and the PDP. */
export type DecisionRecord = Omit<DecisionLogEntry, "id" | "timestamp" | "environment_id" | "pdp_id">;

/**
 * Receives a batch as the text of a JSON array of `DecisionLogEntry` objects: the entries are encoded once, when
 * they are recorded, and a sink passes the text on (to SQL's JSON functions or an HTTP body) without parsing it.
 */
export type DecisionLogSink = (batch: string, count: number) => Promise<void>;

export interface DecisionLogger {
  record(source: DecisionSource, entry: DecisionRecord): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Entries dropped because the sink kept failing or the queue was full. */
  readonly dropped: number;
}

export interface DecisionLoggerOptions {
  /** The PDP instance whose decisions these are. */
  pdpId: string;
  sink: DecisionLogSink;
  flushIntervalMs?: number;
  maxBatch?: number;
  /** Past this many queued entries new ones are dropped (counted), so a dead sink cannot eat the memory. */
  maxQueue?: number;
  onError?: (error: unknown) => void;
}

/**
 * UUIDv7 ids for decision log entries, cheaper than `newId()` (which costs more than the decision): the time part
 * is formatted once per millisecond, the variant and `rand_a` bits are random once per process, and the last 48
 * bits are a counter from a random start, so ids made in one millisecond keep their order.
 */
function decisionIds(): (ms: number) => string {
  const random = randomBytes(9);
  const fixed = random.readUIntBE(0, 3);
  const rand = (fixed >> 12).toString(16).padStart(3, "0");
  const variant = (0x8000 | (fixed & 0x3fff)).toString(16);
  let counter = random.readUIntBE(3, 6);
  let lastMs = -1;
  let prefix = "";
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      const time = ms.toString(16).padStart(12, "0");
      prefix = `${time.slice(0, 8)}-${time.slice(8)}-7${rand}-${variant}-`;
    }
    counter = (counter + 1) % 0x1000000000000;
    return prefix + counter.toString(16).padStart(12, "0");
  };
}

/**
 * Recording encodes the entry to JSON text and pushes it onto an array; a timer ships batches. A check never
 * waits for the log, and a failing sink costs log entries (counted in `dropped`), never decisions. The queue
 * holds strings rather than the request's objects, so a decision's objects die young; the part of the text that
 * names the environment and the PDP is made once per environment.
 */
export function createDecisionLogger(options: DecisionLoggerOptions): DecisionLogger {
  const flushIntervalMs = options.flushIntervalMs ?? 200;
  const maxBatch = options.maxBatch ?? 1000;
  const maxQueue = options.maxQueue ?? 100_000;
  let queue: string[] = [];
  /** Entries taken by a drain and not yet shipped. */
  let inFlight = 0;
  let dropped = 0;
  let failures = 0;
  // Timestamps as toTimestamp() writes them, from text made once per second.
  let second = -1;
  let secondText = "";
  const timestampOf = (ms: number): string => {
    const s = Math.floor(ms / 1000);
    if (s !== second) {
      second = s;
      secondText = toTimestamp(new Date(s * 1000)).slice(0, 20);
    }
    return `${secondText}${String(ms - s * 1000).padStart(3, "0")}+00:00`;
  };
  const nextId = decisionIds();
  const heads = new Map<string, string>();
  const headOf = (s: DecisionSource): string => {
    let head = heads.get(s.environmentId);
    if (head === undefined) {
      head = JSON.stringify({ environment_id: s.environmentId, pdp_id: options.pdpId }).slice(1, -1);
      heads.set(s.environmentId, head);
    }
    return head;
  };

  /** Ships what was queued when it started, in batches; entries recorded meanwhile wait for the next tick. */
  async function drain(): Promise<void> {
    const taken = queue;
    queue = [];
    inFlight = taken.length;
    let sent = 0;
    while (sent < taken.length) {
      const count = Math.min(taken.length - sent, maxBatch);
      try {
        await options.sink(`[${taken.slice(sent, sent + count).join(",")}]`, count);
        failures = 0;
      } catch (error) {
        options.onError?.(error);
        failures += 1;
        // Retried on the next ticks; after five failures in a row the batch is given up.
        if (failures < 5) {
          queue = taken.slice(sent).concat(queue);
          inFlight = 0;
          return;
        }
        failures = 0;
        dropped += count;
      }
      sent += count;
      inFlight -= count;
    }
  }

  // Drains run one after another; a flush() covers everything recorded before it was called.
  let draining = 0;
  let chain = Promise.resolve();
  const flush = (): Promise<void> => {
    draining += 1;
    chain = chain.then(drain).finally(() => void (draining -= 1));
    return chain;
  };

  // A tick while a slow sink is still busy adds nothing: the queue is drained when the sink is free.
  const timer = setInterval(() => draining === 0 && void flush(), flushIntervalMs);
  timer.unref();

  return {
    record(source, entry) {
      if (queue.length + inFlight >= maxQueue) {
        dropped += 1;
        return;
      }
      const ms = Date.now();
      queue.push(
        `{"id":"${nextId(ms)}","timestamp":"${timestampOf(ms)}",${headOf(source)},${JSON.stringify(entry).slice(1)}`,
      );
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
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
