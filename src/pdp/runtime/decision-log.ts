import { randomFillSync, randomInt } from "node:crypto";
import { v7 as uuidv7 } from "uuid";
import { toTimestamp } from "../../lib/time.ts";
import type { DecisionLogChunk, DecisionLogEntry } from "../storage.ts";

/** The environment a decision was made in. */
export interface DecisionSource {
  environmentId: string;
}

/** What a PDP route knows of one decision; the logger adds the id, the time and the PDP. */
export type DecisionRecord = Omit<DecisionLogEntry, "id" | "timestamp" | "pdp_id">;

export type DecisionLogSink = (chunk: DecisionLogChunk) => Promise<void>;

export interface DecisionLogger {
  /**
   * Stamps the entry with its id and the time it was recorded. An entry with an `input` or a `result` is written as
   * JSON at once; others are kept until they are written (within the event loop's turn, or before the next
   * shipment), and must not change meanwhile.
   */
  record(source: DecisionSource, entry: DecisionRecord): void;
  /** Whether `record` records anything (false when the log is off), so a caller can skip building the entry. */
  readonly active: boolean;
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Entries dropped because the sink kept failing or the queue was full. */
  readonly dropped: number;
  /** Entries recorded and not yet shipped. */
  readonly queued: number;
}

export interface DecisionLoggerOptions {
  /** The PDP instance whose decisions these are. */
  pdpId: string;
  sink: DecisionLogSink;
  flushIntervalMs?: number;
  maxBatch?: number;
  /**
   * Past this many queued entries the oldest are dropped (counted), a chunk at a time, so a sink that is away
   * cannot eat the memory and what is kept is the most recent.
   */
  maxQueue?: number;
  /**
   * Sink errors that mean "try again later" (the database is away): the chunk is kept and retried for as long as
   * it takes, rather than given up after five failures in a row.
   */
  retryable?: (error: unknown) => boolean;
  onError?: (error: unknown) => void;
}

/**
 * Time-ordered ids for entries recorded at `now`, in the order recorded, and the time each holds (`ms`, read after
 * `next()`). The state is the logger's own (the `uuid` package's is per process): a clock that never goes back, and
 * within one millisecond a counter from a random start, so ids only grow. The random bits come from a pool: `uuid` would ask the platform for 16 bytes per id,
 * which costs more than the decision.
 */
class DecisionIds {
  ms = -1;
  #seq = 0;
  readonly #pool = new Uint8Array(16 * 256);
  #used = this.#pool.length;
  readonly #options = { msecs: 0, seq: 0, random: new Uint8Array(16) };

  next(now: number): string {
    if (now > this.ms) {
      this.ms = now;
      this.#seq = randomInt(2 ** 31);
    } else if (++this.#seq > 0xffffffff) {
      this.ms += 1;
      this.#seq = 0;
    }
    if (this.#used === this.#pool.length) {
      randomFillSync(this.#pool);
      this.#used = 0;
    }
    // One options object for every id, so that an id allocates nothing but itself.
    const o = this.#options;
    o.msecs = this.ms;
    o.seq = this.#seq;
    for (let i = 0; i < 16; i++) o.random[i] = this.#pool[this.#used++] as number;
    return uuidv7(o);
  }
}

/**
 * One environment's entries since its last chunk: `[`, then the entries' JSON text split by commas, as UTF-8 in a
 * buffer reused from chunk to chunk (so an entry's text lives no longer than the call that writes it).
 */
class Queue {
  buf: Buffer;
  pos = 1;
  count = 0;
  firstId = "";
  lastId = "";

  constructor(
    readonly environmentId: string,
    buf: Buffer,
  ) {
    this.buf = buf;
    this.buf[0] = 0x5b; // [
  }

  add(id: string, json: string): void {
    // Three bytes of UTF-8 at most for each UTF-16 unit, and a comma.
    const need = this.pos + json.length * 3 + 1;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
    // Entries after the first follow a comma.
    if (this.count === 0) this.firstId = id;
    else this.buf[this.pos++] = 0x2c;
    this.pos += this.buf.write(json, this.pos);
    this.lastId = id;
    this.count += 1;
  }

  /** The entries so far as a chunk; the queue starts again, empty. */
  seal(): DecisionLogChunk {
    this.buf[this.pos++] = 0x5d; // ]
    const entries = Buffer.allocUnsafeSlow(this.pos);
    this.buf.copy(entries, 0, 0, this.pos);
    const chunk = {
      environmentId: this.environmentId,
      entries,
      count: this.count,
      firstId: this.firstId,
      lastId: this.lastId,
    };
    this.pos = 1;
    this.count = 0;
    return chunk;
  }
}

/**
 * Plain checks (no `input` nor `result`) are held with the time they were recorded, then stamped and written in runs
 * once this many are held, after the event loop's current turn (so the check whose entry fills the run does not wait
 * for it). Stamped and written one at a time between checks, an entry costs several times what it costs in a run:
 * the HTTP and engine code between two checks push the logger's code and data out of the CPU's caches.
 */
const HELD = 64;

/**
 * Recording reads the clock; the entry is stamped with its id and time and written as JSON into its environment's
 * queue, at once or in a run (see `HELD`). A full queue (`maxBatch` entries) becomes a chunk at once, and a timer
 * ships chunks and what the queues hold. A check never waits for the log, and a failing sink costs log entries
 * (counted in `dropped`), never decisions.
 */
export function createDecisionLogger(options: DecisionLoggerOptions): DecisionLogger {
  const flushIntervalMs = options.flushIntervalMs ?? 200;
  const maxBatch = options.maxBatch ?? 1000;
  const maxQueue = options.maxQueue ?? 100_000;
  let queues = new Map<string, Queue>();
  /** Buffers of queues already made into chunks, for the next ones. */
  const spare: Buffer[] = [];
  /** Chunks not yet shipped, oldest first; the one being shipped, or refused, stays at the front. */
  const backlog: DecisionLogChunk[] = [];
  /** Entries held, in the order they were recorded, with the time they were. */
  let held: { environmentId: string; entry: DecisionRecord; now: number }[] = [];
  /** Entries held, in the queues and in the backlog. */
  let pending = 0;
  let dropped = 0;
  let failures = 0;
  const ids = new DecisionIds();
  // The time as text, made anew only when the millisecond changes.
  let stampMs = -1;
  let stamp = "";

  /** The entry as it is written: every field named, in the order of `DecisionLogEntry`. */
  function stamped(entry: DecisionRecord, now: number): DecisionLogEntry {
    const id = ids.next(now);
    if (ids.ms !== stampMs) {
      stampMs = ids.ms;
      stamp = toTimestamp(new Date(stampMs));
    }
    return {
      id,
      timestamp: stamp,
      pdp_id: options.pdpId,
      query: entry.query,
      user_key: entry.user_key,
      action: entry.action,
      resource_type: entry.resource_type,
      resource_key: entry.resource_key,
      tenant: entry.tenant,
      decision: entry.decision,
      reason: entry.reason,
      input: entry.input,
      result: entry.result,
      revision: entry.revision,
      latency_us: entry.latency_us,
    };
  }

  function write(environmentId: string, entry: DecisionLogEntry): void {
    let q = queues.get(environmentId);
    if (q === undefined) {
      q = new Queue(environmentId, spare.pop() ?? Buffer.allocUnsafe(64 * 1024));
      queues.set(environmentId, q);
    } else if (q.count === maxBatch) {
      backlog.push(q.seal());
    }
    q.add(entry.id, JSON.stringify(entry));
  }

  function writeHeld(): void {
    const run = held;
    held = [];
    for (const { environmentId, entry, now } of run) write(environmentId, stamped(entry, now));
  }

  /** Makes every queue's entries into a chunk; a few buffers of ordinary size are kept for the next ones. */
  function take(): void {
    writeHeld();
    for (const q of queues.values()) {
      if (q.count > 0) backlog.push(q.seal());
      if (spare.length < 8 && q.buf.length <= 1024 * 1024) spare.push(q.buf);
    }
    queues = new Map();
  }

  /** The chunk the sink has now: at the front of the backlog, and not to be dropped while it is shipped. */
  let inFlight: DecisionLogChunk | undefined;

  /** Ships, oldest first, what was queued when it started; entries recorded meanwhile wait for the next tick. */
  async function drain(): Promise<void> {
    take();
    for (let n = backlog.length; n > 0 && backlog.length > 0; n--) {
      const chunk = backlog[0] as DecisionLogChunk;
      inFlight = chunk;
      try {
        await options.sink(chunk);
        failures = 0;
      } catch (error) {
        options.onError?.(error);
        // Retried on the next ticks, from the front; after five failures in a row the chunk is given up, unless
        // the sink is only away.
        if (options.retryable?.(error) || ++failures < 5) return;
        failures = 0;
        dropped += chunk.count;
      } finally {
        inFlight = undefined;
      }
      backlog.shift();
      pending -= chunk.count;
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

  // A tick while a slow sink is still busy adds nothing: the queues are drained when the sink is free.
  const timer = setInterval(() => draining === 0 && void flush(), flushIntervalMs);
  timer.unref();

  return {
    record(source, entry) {
      if (pending >= maxQueue) {
        // The oldest chunk waiting goes (not the one being shipped); when there is none, this entry does.
        const first = inFlight === undefined ? 0 : 1;
        if (backlog.length <= first) take();
        const oldest = backlog.length > first ? backlog.splice(first, 1)[0] : undefined;
        const count = oldest ? oldest.count : 1;
        dropped += count;
        if (!oldest) return;
        pending -= count;
      }
      pending += 1;
      const now = Date.now();
      if (entry.input === null && entry.result === null) {
        held.push({ environmentId: source.environmentId, entry, now });
        if (held.length === HELD) setImmediate(writeHeld);
      } else {
        // The caller's request and answer may change once this returns: written now, after the entries held.
        writeHeld();
        write(source.environmentId, stamped(entry, now));
      }
    },
    active: true,
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
    get dropped() {
      return dropped;
    },
    get queued() {
      return pending;
    },
  };
}

/** For `GATEHOUSE_DECISION_LOG=off`: records nothing. */
export const disabledDecisionLogger: DecisionLogger = {
  record() {},
  active: false,
  flush: async () => {},
  close: async () => {},
  dropped: 0,
  queued: 0,
};
