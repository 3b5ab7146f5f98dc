import { createBatcher } from "../../lib/batcher.ts";
import { UuidV7Writer } from "../../lib/ids.ts";
import type { DecisionLogChunk, DecisionRecord } from "../storage.ts";

/** The environment a decision was made in. */
export interface DecisionSource {
  environmentId: string;
}

export type { DecisionRecord };

/** One check of a bulk request: the request's query and revision are the bulk record's. */
export type BulkCheckRecord = Omit<DecisionRecord, "query" | "revision">;

export type DecisionLogSink = (chunk: DecisionLogChunk) => Promise<void>;

export interface DecisionLogger {
  /**
   * Gives the entry an id that holds the time it was recorded. An entry with an `input` or a `result` is written as
   * JSON at once; others are kept until they are written (within the event loop's turn, or before the next
   * shipment), and must not change meanwhile.
   */
  record(source: DecisionSource, entry: DecisionRecord): void;
  /**
   * Records a bulk request's checks as one entry, `{"query","revision","bulk":[{id, ...check}, ...]}`: each check
   * still has its own id (consecutive, in order) and reads back as a decision of its own (decision-log.repo.ts),
   * but the request costs the log one entry and one reservation. `checks` are the text JSON.stringify writes of
   * each check's `BulkCheckRecord`. Written at once.
   */
  recordBulk(
    source: DecisionSource,
    bulk: Pick<DecisionRecord, "query" | "revision">,
    checks: readonly string[],
  ): void;
  /** Whether `record` records anything (false when the log is off), so a caller can skip building the entry. */
  readonly active: boolean;
  /** Ships, once each, the chunks of what was recorded so far; a chunk the sink refuses waits for the timer. */
  flush(): Promise<void>;
  /** Stops the timer and ships everything; at this point a sink that is away gets five tries too. */
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

/** An entry's text up to its id, and after it: `{"id":"` id `"`, then the record's JSON with its `{` as a comma. */
const ID_OPEN = Buffer.from('{"id":"', "latin1");
const ENTRY_OVERHEAD = ID_OPEN.length + 36 + 1;

/**
 * One environment's entries since its last chunk: `[`, then the entries' JSON text split by commas, as UTF-8 in a
 * buffer reused from chunk to chunk (so an entry's text lives no longer than the call that writes it).
 */
class Queue {
  buf: Buffer;
  pos = 1;
  count = 0;
  /** Where the first and the last entry's id start. */
  firstAt = 0;
  lastAt = 0;
  /** Four numbers a decision (see `DecisionLogChunk.spans`); reused from chunk to chunk. */
  spans = new Uint32Array(4 * 256);
  /** The bulk entry being written: its head's start and end (0, 0 outside one). */
  private headStart = 0;
  private headEnd = 0;

  constructor(
    readonly environmentId: string,
    buf: Buffer,
  ) {
    this.buf = buf;
    this.buf[0] = 0x5b; // [
  }

  /** Room for `units` more UTF-16 units of text (three bytes of UTF-8 at most each). */
  private reserve(units: number): void {
    const need = this.pos + units * 3;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
  }

  /** `{"id":"` the next id `",` and the record's JSON after its `{`, at `pos`. */
  private entry(ids: UuidV7Writer, now: number, json: string): void {
    const buf = this.buf;
    const start = this.pos;
    ID_OPEN.copy(buf, this.pos);
    this.lastAt = this.pos + ID_OPEN.length;
    if (this.count === 0) this.firstAt = this.lastAt;
    ids.write(now, buf, this.lastAt);
    buf[this.lastAt + 36] = 0x22; // "
    const record = this.lastAt + 37;
    this.pos = record + buf.write(json, record);
    buf[record] = 0x2c; // the record's `{` continues the entry
    let spans = this.spans;
    const at = 4 * this.count;
    if (at + 4 > spans.length) {
      spans = new Uint32Array(2 * spans.length);
      spans.set(this.spans);
      this.spans = spans;
    }
    spans[at] = start;
    spans[at + 1] = this.pos;
    spans[at + 2] = this.headStart;
    spans[at + 3] = this.headEnd;
  }

  add(ids: UuidV7Writer, now: number, json: string): void {
    // A comma, the id, and the record.
    this.reserve(1 + ENTRY_OVERHEAD + json.length);
    // Entries after the first follow a comma.
    if (this.count > 0) this.buf[this.pos++] = 0x2c;
    this.entry(ids, now, json);
    this.count += 1;
  }

  /** One entry `head` (`{"query":...,"revision":...`) `,"bulk":[` the checks, each with its id `]}`. */
  addBulk(ids: UuidV7Writer, now: number, head: string, checks: readonly string[]): void {
    let units = head.length + 12;
    for (const json of checks) units += 1 + ENTRY_OVERHEAD + json.length;
    this.reserve(units);
    if (this.count > 0) this.buf[this.pos++] = 0x2c;
    const headAt = this.pos;
    this.pos += this.buf.write(head, this.pos);
    [this.headStart, this.headEnd] = [headAt, this.pos];
    this.pos += this.buf.write(',"bulk":[', this.pos);
    const first = this.count;
    for (const json of checks) {
      if (this.count > first) this.buf[this.pos++] = 0x2c;
      this.entry(ids, now, json);
      this.count += 1;
    }
    [this.headStart, this.headEnd] = [0, 0];
    this.pos += this.buf.write("]}", this.pos);
  }

  /** The entries so far as a chunk; the queue starts again, empty. */
  seal(pdpId: string): DecisionLogChunk {
    this.buf[this.pos++] = 0x5d; // ]
    const entries = Buffer.allocUnsafeSlow(this.pos);
    this.buf.copy(entries, 0, 0, this.pos);
    const chunk = {
      environmentId: this.environmentId,
      pdpId,
      entries,
      count: this.count,
      firstId: this.buf.toString("latin1", this.firstAt, this.firstAt + 36),
      lastId: this.buf.toString("latin1", this.lastAt, this.lastAt + 36),
      spans: this.spans.slice(0, 4 * this.count),
    };
    this.pos = 1;
    this.count = 0;
    return chunk;
  }
}

/**
 * Plain checks (no `input` nor `result`) are held with the time they were recorded, then given ids and written in runs
 * once this many are held, after the event loop's current turn (so the check whose entry fills the run does not wait
 * for it). Written one at a time between checks, an entry costs several times what it costs in a run:
 * the HTTP and engine code between two checks push the logger's code and data out of the CPU's caches.
 */
const HELD = 64;

/**
 * Recording reads the clock; the entry is given its id (which holds the time) and written as JSON into its environment's
 * queue, at once or in a run (see `HELD`). A full queue (`maxBatch` entries) becomes a chunk and is shipped at once;
 * a timer makes what the queues hold into chunks and ships them. The chunks wait in the shared batcher
 * (src/lib/batcher.ts), one per shipment. A check never waits for the log, and a failing sink costs log entries
 * (counted in `dropped`), never decisions.
 */
export function createDecisionLogger(options: DecisionLoggerOptions): DecisionLogger {
  const maxBatch = options.maxBatch ?? 1000;
  let queues = new Map<string, Queue>();
  /** Buffers of queues already made into chunks, for the next ones. */
  const spare: Buffer[] = [];
  /** Entries held, in the order they were recorded, with the time they were. */
  let held: { environmentId: string; entry: DecisionRecord; now: number }[] = [];
  /** Entries recorded and not yet in a chunk (held, or in the queues). */
  let open = 0;
  const ids = new UuidV7Writer();

  function seal(q: Queue): void {
    open -= q.count;
    chunks.add(q.seal(options.pdpId));
  }

  function write(environmentId: string, entry: DecisionRecord, now: number): void {
    const q = queueOf(environmentId);
    if (q.count >= maxBatch) seal(q);
    q.add(ids, now, JSON.stringify(entry));
  }

  function queueOf(environmentId: string): Queue {
    const q = queues.get(environmentId);
    if (q !== undefined) return q;
    const made = new Queue(environmentId, spare.pop() ?? Buffer.allocUnsafe(64 * 1024));
    queues.set(environmentId, made);
    return made;
  }

  function writeHeld(): void {
    const run = held;
    held = [];
    for (const { environmentId, entry, now } of run) write(environmentId, entry, now);
  }

  /** Makes every queue's entries into a chunk; a few buffers of ordinary size are kept for the next ones. */
  function take(): void {
    writeHeld();
    for (const q of queues.values()) {
      if (q.count > 0) seal(q);
      if (spare.length < 8 && q.buf.length <= 1024 * 1024) spare.push(q.buf);
    }
    queues = new Map();
  }

  const chunks = createBatcher<DecisionLogChunk>({
    send: ([chunk]) => options.sink(chunk as DecisionLogChunk),
    flushIntervalMs: options.flushIntervalMs ?? 200,
    batchSize: 1,
    maxQueue: options.maxQueue ?? 100_000,
    weight: (chunk) => chunk.count,
    // Past the bound the oldest chunk waiting goes (not the one being shipped), so what is kept is the most recent.
    dropWhenFull: "oldest",
    staged: { count: () => open, seal: take },
    // While the database is away chunks wait for it, retried on every tick; other failures give a chunk up after
    // five in a row.
    ...(options.retryable && { retryable: options.retryable }),
    onFailure: (failure) => options.onError?.(failure.error),
  });

  return {
    record(source, entry) {
      if (!chunks.reserve(1)) return;
      open += 1;
      const now = Date.now();
      if (entry.input === undefined && entry.result === undefined) {
        held.push({ environmentId: source.environmentId, entry, now });
        if (held.length === HELD) setImmediate(writeHeld);
      } else {
        // The caller's request and answer may change once this returns: written now, after the entries held.
        writeHeld();
        write(source.environmentId, entry, now);
      }
    },
    recordBulk(source, bulk, checks) {
      if (checks.length === 0 || !chunks.reserve(checks.length)) return;
      open += checks.length;
      writeHeld();
      const q = queueOf(source.environmentId);
      if (q.count > 0 && q.count + checks.length > maxBatch) seal(q);
      const head = `{"query":${JSON.stringify(bulk.query)},"revision":${bulk.revision}`;
      q.addBulk(ids, Date.now(), head, checks);
    },
    active: true,
    flush: chunks.flush,
    close: chunks.close,
    get dropped() {
      return chunks.dropped;
    },
    get queued() {
      return chunks.queued;
    },
  };
}

/** For `GATEHOUSE_DECISION_LOG=off`: records nothing. */
export const disabledDecisionLogger: DecisionLogger = {
  record() {},
  recordBulk() {},
  active: false,
  flush: async () => {},
  close: async () => {},
  dropped: 0,
  queued: 0,
};
