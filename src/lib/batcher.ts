/*
 * The one batcher behind both logs (the API log and the decision log): items wait in memory and go to a sink in
 * batches, off the caller's path. Adding never waits and never throws; a sink that fails or is away costs items
 * (counted), never the caller's work.
 */

/** What the batcher tells of a batch the sink failed to take. */
export interface BatchFailure<T> {
  error: unknown;
  batch: T[];
  /** Failures in a row that counted: a retryable one counts only at shutdown. */
  attempts: number;
  /** The sink is only away (`retryable`): the batch is kept however long it takes. */
  retryable: boolean;
  /** The batch is dropped for it (the last of `maxAttempts` failures in a row). */
  gaveUp: boolean;
  /** When the batch is tried again, unless it was given up. */
  retryInMs: number;
}

export interface BatcherOptions<T> {
  /** The sink; a batch it rejects stays at the front of the queue and is tried again. */
  send(batch: T[]): Promise<void>;
  /** How often what waits is sent. */
  flushIntervalMs: number;
  /** Items per `send`; when a whole batch waits it is sent at once, after the caller's turn, without the timer. */
  batchSize: number;
  /** Bound of what waits, in `weight` (items waiting, in flight, and `staged`). */
  maxQueue: number;
  /** What an item counts against the bound (default 1). */
  weight?: (item: T) => number;
  /**
   * Past the bound: `newest` refuses what comes (the API log keeps what it has), `oldest` drops the oldest items
   * waiting (the decision log keeps the most recent), never the batch in flight.
   */
  dropWhenFull: "newest" | "oldest";
  /**
   * Items on their way in, held by the caller (the decision log's open chunks): counted against the bound, and
   * sealed (added as items) before every timed, explicit and final send, and when the oldest must go.
   */
  staged?: { count(): number; seal(): void };
  /** Errors that mean "the sink is away": the batch is kept and tried again every `retryableDelayMs`. */
  retryable?: (error: unknown) => boolean;
  /** Default `flushIntervalMs`. */
  retryableDelayMs?: number;
  /** Other failures in a row before a batch is dropped (default 5); they back off from `flushIntervalMs`. */
  maxAttempts?: number;
  onFailure?: (failure: BatchFailure<T>) => void;
  /** Items refused or dropped for the bound. */
  onOverflow?: (weight: number) => void;
}

export interface Batcher<T> {
  /** Queues an item (see `dropWhenFull`). */
  add(item: T): void;
  /** Room for `weight` more staged: false (and counted as dropped) when none can be made. */
  reserve(weight: number): boolean;
  /** Sends, once each, the batches of what waits now; a failing one stays (and the timer backs off). */
  flush(): Promise<void>;
  /** Stops the timer and sends everything, retrying every failure, given up after `maxAttempts`. */
  close(): Promise<void>;
  /** Weight waiting, in flight and staged. */
  readonly queued: number;
  /** Weight dropped since the start: refused or dropped for the bound, or given up after failures. */
  readonly dropped: number;
}

const MAX_BACKOFF_MS = 5000;
/** At shutdown a failed batch is tried again after at most this long. */
const FINAL_PAUSE_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends are one at a time, oldest first, and the batch in flight stays at the front until the sink took it or it
 * is given up. A send covers what waited when it began; a timer tick while one runs adds nothing.
 */
export function createBatcher<T>(options: BatcherOptions<T>): Batcher<T> {
  const { send, flushIntervalMs, batchSize, maxQueue, staged } = options;
  const weight = options.weight ?? (() => 1);
  const maxAttempts = options.maxAttempts ?? 5;
  const retryableDelayMs = options.retryableDelayMs ?? flushIntervalMs;
  const queue: T[] = [];
  let queuedWeight = 0;
  /** Items at the front in flight, and items at the front the current send covers. */
  let sending = 0;
  let covered = 0;
  let attempts = 0;
  /** No timed or size-started send before this (a failure backs off). */
  let retryAt = 0;
  let dropped = 0;
  /** Sends started and not finished; they run one after another on `chain`. */
  let busy = 0;
  let chain = Promise.resolve();
  let soon = false;
  /** A timer tick found a send under way: the next send seals what is staged, as the tick would have. */
  let sealDue = false;
  const stagedCount = () => staged?.count() ?? 0;

  /** The first `n` items leave the queue. */
  function remove(n: number): number {
    let w = 0;
    for (const item of queue.splice(0, n)) w += weight(item);
    queuedWeight -= w;
    covered -= n;
    return w;
  }

  /** Drops the oldest items waiting (not in flight) until `w` more fit; false when none is left to drop. */
  function dropOldest(w: number, seal: boolean): boolean {
    while (queuedWeight + stagedCount() + w > maxQueue) {
      if (queue.length <= sending && seal) staged?.seal();
      if (queue.length <= sending) return false;
      const oldest = queue.splice(sending, 1)[0] as T;
      if (covered > sending) covered -= 1;
      const ow = weight(oldest);
      queuedWeight -= ow;
      overflow(ow);
    }
    return true;
  }

  function overflow(w: number): void {
    dropped += w;
    options.onOverflow?.(w);
  }

  /** Sends the batches of what waits now, until one fails; `final` retries every failure, within the send. */
  async function pass(seal: boolean, final: boolean): Promise<void> {
    if (seal || sealDue) staged?.seal();
    sealDue = false;
    covered = queue.length;
    while (covered > 0) {
      const batch = queue.slice(0, Math.min(batchSize, covered));
      sending = batch.length;
      let error: unknown;
      let failed = false;
      try {
        await send(batch);
      } catch (e) {
        error = e;
        failed = true;
      } finally {
        sending = 0;
      }
      if (!failed) {
        remove(batch.length);
        attempts = 0;
        retryAt = 0;
        continue;
      }
      const retryable = options.retryable?.(error) ?? false;
      // At shutdown an absent sink counts too: the process is leaving.
      if (!retryable || final) attempts += 1;
      const gaveUp = attempts >= maxAttempts;
      const retryInMs =
        retryable && !final ? retryableDelayMs : Math.min(flushIntervalMs * 2 ** attempts, MAX_BACKOFF_MS);
      options.onFailure?.({ error, batch, attempts, retryable, gaveUp, retryInMs });
      if (gaveUp) {
        attempts = 0;
        dropped += remove(batch.length);
      } else if (final) {
        await sleep(Math.min(retryInMs, FINAL_PAUSE_MS));
      } else {
        retryAt = Date.now() + retryInMs;
        break;
      }
    }
    covered = 0;
  }

  function run(seal: boolean, final = false): Promise<void> {
    busy += 1;
    const done = chain
      .then(() => pass(seal, final))
      .finally(() => {
        busy -= 1;
        startIfFull();
      });
    // A send that threw (a callback's bug) does not stop the ones after it.
    chain = done.catch(() => {});
    return done;
  }

  /** A whole batch waiting is sent without the timer, but never inside the caller's turn. */
  function startIfFull(): void {
    if (soon || busy > 0 || queue.length < batchSize || Date.now() < retryAt) return;
    soon = true;
    setImmediate(() => {
      soon = false;
      if (busy === 0) void run(false);
    });
  }

  const timer = setInterval(() => {
    if (busy > 0) sealDue = true;
    else if ((queue.length > 0 || stagedCount() > 0) && Date.now() >= retryAt) void run(true);
  }, flushIntervalMs);
  timer.unref();

  return {
    add(item) {
      const w = weight(item);
      if (queuedWeight + stagedCount() + w > maxQueue) {
        if (options.dropWhenFull === "newest" || !dropOldest(w, false)) return overflow(w);
      }
      queue.push(item);
      queuedWeight += w;
      startIfFull();
    },
    reserve(w) {
      if (queuedWeight + stagedCount() + w <= maxQueue) return true;
      if (options.dropWhenFull === "oldest" && dropOldest(w, true)) return true;
      overflow(w);
      return false;
    },
    flush: () => run(true),
    async close() {
      clearInterval(timer);
      // What is added meanwhile is sent too.
      do await run(true, true);
      while (queue.length > 0 || stagedCount() > 0);
    },
    get queued() {
      return queuedWeight + stagedCount();
    },
    get dropped() {
      return dropped;
    },
  };
}
