import { randomBytes } from "node:crypto";
import { toTimestamp } from "../lib/time.ts";
import type { Reason } from "./engine/index.ts";

export type DecisionQuery =
  "check" | "bulk_check" | "get_user_permissions" | "get_authorized_users" | "all_tenants" | "user_tenants";

/**
 * One decision as the PDP records it; shipped to the control plane in chunks of one environment. The environment,
 * its organization and project belong to the chunk, not to each entry.
 */
export interface DecisionLogEntry {
  /** A UUIDv7: its first 48 bits are the entry's time in milliseconds, so ids sort by time. */
  id: string;
  timestamp: string;
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

/** What a PDP route knows of one decision; the logger adds the id, the time and the PDP. */
export type DecisionRecord = Omit<DecisionLogEntry, "id" | "timestamp" | "pdp_id">;

/**
 * Decisions of one environment as the log stores them: a JSON array of `DecisionLogEntry` objects as UTF-8 bytes,
 * encoded once, when they were recorded, and neither parsed nor decoded on the way to the database, which keeps
 * the text as one row. `firstId` and `lastId` are the least and greatest ids, which bound the chunk in time.
 */
export interface DecisionLogChunk {
  environmentId: string;
  entries: Uint8Array<ArrayBuffer>;
  count: number;
  firstId: string;
  lastId: string;
}

export type DecisionLogSink = (chunk: DecisionLogChunk) => Promise<void>;

export interface DecisionLogger {
  /**
   * Stamps the entry with its id and time. The entry object is kept until it is encoded (within the next few
   * dozen entries, or the next flush), so the caller must not change it; its `input` and `result` are encoded at
   * once and may change.
   */
  record(source: DecisionSource, entry: DecisionRecord): void;
  /**
   * Whether `record` records anything: false when the log is off, so that a caller can skip building the entry and
   * timing the decision.
   */
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
 * UUIDv7 ids for decision log entries, cheaper than `newId()` (which costs more than the decision): the time part
 * is formatted once per millisecond, the variant and `rand_a` bits are random once per process, and the last 48
 * bits are a counter from a random start below 2^47, so ids made in one millisecond keep their order (it would
 * take 2^47 decisions to wrap). Given times that never go back, the ids only grow. Only the counter's low 16 bits
 * change from one id to the next: `next()` returns them, and the id's first 32 characters (`stem`) are made anew
 * only when they change, which `version` counts.
 */
class DecisionIds {
  readonly #rand: string;
  readonly #variant: string;
  // The counter is hi * 2^16 + lo.
  #hi: number;
  #lo: number;
  #lastMs = -1;
  stem = "";
  version = 0;

  constructor() {
    const random = randomBytes(9);
    const fixed = random.readUIntBE(0, 3);
    this.#rand = (fixed >> 12).toString(16).padStart(3, "0");
    this.#variant = (0x8000 | (fixed & 0x3fff)).toString(16);
    this.#hi = random.readUIntBE(3, 4) >>> 1;
    this.#lo = random.readUInt16BE(7);
  }

  next(ms: number): number {
    this.#lo += 1;
    if (this.#lo === 0x10000) {
      this.#lo = 0;
      this.#hi = (this.#hi + 1) % 0x100000000;
      this.#lastMs = -1;
    }
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      const time = ms.toString(16).padStart(12, "0");
      const hi = this.#hi.toString(16).padStart(8, "0");
      this.stem = `${time.slice(0, 8)}-${time.slice(8)}-7${this.#rand}-${this.#variant}-${hi}`;
      this.version += 1;
    }
    return this.#lo;
  }
}

const MILLIS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, "0"));

/** `toTimestamp(new Date(ms))`, with the text up to the second made once a second. */
function timestamps(): (ms: number) => string {
  let second = -1;
  let upToSecond = "";
  return (ms) => {
    const millis = ms % 1000;
    if (ms - millis !== second) {
      second = ms - millis;
      upToSecond = toTimestamp(new Date(second)).slice(0, 20);
    }
    return `${upToSecond}${MILLIS[millis]}+00:00`;
  };
}

// Buffers, as the ones written into are, so that the code copying from one to the other sees one kind of array.
const bytes = (text: string): Buffer => Buffer.from(text);

/** The ASCII codes of the hexadecimal digits. */
const HEX = bytes("0123456789abcdef");
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const NULL = bytes("null");
/** Keys with the values that nearly every entry has between them, so that one copy writes them. */
const DECISION_REASON = {
  true: bytes(',"decision":true,"reason":'),
  false: bytes(',"decision":false,"reason":'),
  null: bytes(',"decision":null,"reason":'),
};
const NO_INPUT_NOR_RESULT = bytes(',"input":null,"result":null,"revision":');

/**
 * JSON text written straight into a buffer as UTF-8 bytes, growing it when needed. Entries are written field by
 * field, with no string made on the way. Built as a string from a template and then written out, an entry cost
 * 1.8 µs in a loop against 1.2 µs so, and its short-lived strings brought five times as many young-generation
 * collections. ASCII text that JSON leaves as it is, nearly all a decision holds, is copied a character at a time;
 * other text is written as JSON.stringify has it (the test checks every entry is byte for byte what
 * JSON.stringify writes). Keys and other constant text are kept as bytes, those that follow one another in
 * nearly every entry as one run.
 */
class JsonBytes {
  buf: Buffer;
  /** Bytes used. */
  pos = 0;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.pos + n, this.buf.length * 2));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
  }

  /** Bytes known to be JSON text of their place: keys, punctuation, literals. */
  raw(text: Uint8Array): void {
    this.room(text.length);
    const buf = this.buf;
    const p = this.pos;
    // A call of `set` costs about as much as copying two dozen bytes one by one.
    if (text.length > 24) buf.set(text, p);
    else for (let i = 0; i < text.length; i++) buf[p + i] = text[i] as number;
    this.pos = p + text.length;
  }

  /** A string that is JSON text already (from JSON.stringify, say). */
  text(s: string): void {
    this.room(s.length * 3);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.pos += buf.write(s, this.pos);
        return;
      }
      buf[p++] = c;
    }
    this.pos = p;
  }

  /** A string as a JSON string. */
  string(s: string): void {
    // Six bytes a UTF-16 unit is the most JSON.stringify's text takes in UTF-8 (`\u001f`), and two quotes.
    this.room(s.length * 6 + 2);
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = QUOTE;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c === QUOTE || c === BACKSLASH || c >= 0x80) {
        this.pos += buf.write(JSON.stringify(s), this.pos);
        return;
      }
      buf[p++] = c;
    }
    buf[p++] = QUOTE;
    this.pos = p;
  }

  nullable(s: string | null): void {
    if (s === null) this.raw(NULL);
    else this.string(s);
  }

  /** A number as JSON.stringify writes it (null when not finite); whole ones digit by digit. */
  number(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) {
      this.text(Number.isFinite(n) ? `${n}` : "null");
      return;
    }
    let digits = 1;
    for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits += 1;
    this.room(digits);
    let rest = n;
    for (let p = this.pos + digits - 1; p >= this.pos; p--) {
      this.buf[p] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    this.pos += digits;
  }

  /** Four hexadecimal digits of a number below 2^16. */
  hex4(n: number): void {
    this.room(4);
    const buf = this.buf;
    const p = this.pos;
    buf[p] = HEX[n >> 12] as number;
    buf[p + 1] = HEX[(n >> 8) & 0xf] as number;
    buf[p + 2] = HEX[(n >> 4) & 0xf] as number;
    buf[p + 3] = HEX[n & 0xf] as number;
    this.pos = p + 4;
  }
}

const KEY = {
  userKey: bytes(',"user_key":'),
  action: bytes(',"action":'),
  resourceType: bytes(',"resource_type":'),
  resourceKey: bytes(',"resource_key":'),
  tenant: bytes(',"tenant":'),
  input: bytes(',"input":'),
  result: bytes(',"result":'),
  revision: bytes(',"revision":'),
  latency: bytes(',"latency_us":'),
};

const REASON = {
  rbac: bytes('{"kind":"rbac","role":'),
  deny: bytes('{"kind":"deny","code":'),
  rebac: bytes('{"kind":"rebac","role":'),
  abac: bytes('{"kind":"abac","user_set":'),
  tenant: bytes(',"tenant":'),
  message: bytes(',"message":'),
  instance: bytes(',"instance":'),
  via: bytes(',"via":['),
  hopRole: bytes('{"role":'),
  relation: bytes(',"relation":'),
  resourceSet: bytes(',"resource_set":'),
  end: bytes("]}"),
};

/** The engine's reasons, field by field in the order the engine builds them; other values as JSON.stringify does. */
function writeReason(w: JsonBytes, value: unknown): void {
  if (value === null) return w.raw(NULL);
  const r = value as Reason;
  switch (r.kind) {
    case "rbac":
      w.raw(REASON.rbac);
      w.string(r.role);
      w.raw(REASON.tenant);
      w.string(r.tenant);
      return w.byte(CLOSE_BRACE);
    case "deny":
      // A deny naming expired grants is rare: JSON.stringify writes its `expired` list.
      if (r.expired !== undefined) return w.text(JSON.stringify(value));
      w.raw(REASON.deny);
      w.string(r.code);
      w.raw(REASON.message);
      w.string(r.message);
      return w.byte(CLOSE_BRACE);
    case "rebac": {
      w.raw(REASON.rebac);
      w.string(r.role);
      w.raw(REASON.instance);
      w.string(r.instance);
      w.raw(REASON.tenant);
      w.string(r.tenant);
      w.raw(REASON.via);
      for (let i = 0; i < r.via.length; i++) {
        const hop = r.via[i] as (typeof r.via)[number];
        if (i > 0) w.byte(COMMA);
        w.raw(REASON.hopRole);
        w.string(hop.role);
        w.raw(REASON.instance);
        w.string(hop.instance);
        w.raw(REASON.relation);
        w.string(hop.relation);
        w.byte(CLOSE_BRACE);
      }
      return w.raw(REASON.end);
    }
    case "abac":
      w.raw(REASON.abac);
      w.string(r.user_set);
      w.raw(REASON.resourceSet);
      w.string(r.resource_set);
      return w.byte(CLOSE_BRACE);
    default:
      return w.text(JSON.stringify(value));
  }
}

/** JSON text of a value, or "null": for an entry's input and result, encoded when the entry is recorded. */
const jsonValue = (value: unknown): string => (value === null ? "null" : JSON.stringify(value));

/** One environment's entries since its last chunk, as UTF-8 JSON text: `[`, then the entries split by commas. */
interface Queue {
  environmentId: string;
  out: JsonBytes;
  count: number;
  /** Where the last entry's id starts; the first entry's starts at `FIRST_ID`. */
  lastIdAt: number;
}

const ENTRY_START = bytes('{"id":"');
const FIRST_ID = 1 + ENTRY_START.length;
const ID_LENGTH = 36;

/**
 * Entries are held, as the caller's objects, until this many have been recorded; then, once the event loop has
 * run the callbacks of its current turn, the held ones are encoded one after another.
 * In a server the code run between two checks (HTTP, routing, the engine) pushes the encoder's code and data out
 * of the CPU's caches: encoded one at a time, an entry cost about 5 µs in a server against 1.4 µs in a loop. In a
 * run they stay warm after the first entry; the logger's share of a server's event loop fell from about 6% to 3%
 * (docs/benchmarks.md). More entries held would keep more of them alive through a young-generation collection.
 */
const HELD = 64;
/** Entries past this many in the lists of held ones are let go of once encoded (see `encodeHeld`). */
const KEPT = 4 * HELD;

/**
 * Recording stamps the entry and holds it; held entries are encoded in runs (see `HELD`) to JSON text written as
 * UTF-8 bytes into their environment's buffer (see `JsonBytes`), in the order they were recorded. A full buffer
 * (`maxBatch` entries) becomes a chunk at once, and a timer ships chunks and what the buffers and the held entries
 * hold. A check never waits for the log, and a failing sink costs log entries (counted in `dropped`), never
 * decisions. What a decision allocates lives no longer than a few dozen checks (the bytes go into buffers that are
 * reused), so the log adds little work for the garbage collector, all of it in the young generation. The clock the
 * entries are stamped with never goes back, so each chunk's first and last entries hold its least and greatest ids.
 */
export function createDecisionLogger(options: DecisionLoggerOptions): DecisionLogger {
  const flushIntervalMs = options.flushIntervalMs ?? 200;
  const maxBatch = options.maxBatch ?? 1000;
  const maxQueue = options.maxQueue ?? 100_000;
  let queues = new Map<string, Queue>();
  /** Buffers of queues already made into chunks, for the next ones. */
  const spare: Buffer[] = [];
  /** Chunks not yet shipped, oldest first; a chunk the sink refused stays at the front. */
  let backlog: DecisionLogChunk[] = [];
  /** Entries in the queues and the backlog. */
  let pending = 0;
  let dropped = 0;
  let failures = 0;
  let clock = 0;
  const ids = new DecisionIds();
  const timestamp = timestamps();
  const pdp = JSON.stringify({ pdp_id: options.pdpId }).slice(1, -1);
  // An entry's text up to its id's last four digits, and from them to its query's value: the same for every entry
  // of one version of the ids' stem (which changes with the millisecond); made at the first entry.
  let stampVersion = -1;
  let beforeDigits: Buffer = Buffer.alloc(0);
  let afterDigits: Buffer = Buffer.alloc(0);

  // Entries recorded and not yet encoded, in the order they were recorded (see HELD).
  const held: DecisionRecord[] = [];
  const heldEnvironments: string[] = [];
  const heldTimes: number[] = [];
  const heldInputs: string[] = [];
  const heldResults: string[] = [];
  let heldCount = 0;

  /** Encodes the held entries into their environments' buffers, in the order they were recorded. */
  function encodeHeld(): void {
    for (let i = 0; i < heldCount; i++) {
      encode(
        heldEnvironments[i] as string,
        held[i] as DecisionRecord,
        heldTimes[i] as number,
        heldInputs[i] as string,
        heldResults[i] as string,
      );
    }
    // After a burst (many bulk requests in one turn, say) let go of the entries past a few runs' length, which the
    // next runs would not overwrite. Runs a little longer than HELD are common under load; the lists keep their
    // length for them rather than being cut and grown again.
    if (heldCount > KEPT) {
      for (const list of [held, heldEnvironments, heldTimes, heldInputs, heldResults]) list.length = KEPT;
    }
    heldCount = 0;
  }

  function encode(
    environmentId: string,
    entry: DecisionRecord,
    ms: number,
    input: string,
    result: string,
  ): void {
    const digits = ids.next(ms);
    if (ids.version !== stampVersion) {
      stampVersion = ids.version;
      beforeDigits = bytes(`{"id":"${ids.stem}`);
      afterDigits = bytes(`","timestamp":"${timestamp(ms)}",${pdp},"query":`);
    }
    let q = queues.get(environmentId);
    if (q === undefined) {
      const out = new JsonBytes(spare.pop() ?? Buffer.allocUnsafe(64 * 1024));
      out.buf[0] = OPEN_BRACKET;
      out.pos = 1;
      q = { environmentId, out, count: 0, lastIdAt: FIRST_ID };
      queues.set(environmentId, q);
    } else if (q.count === maxBatch) {
      seal(q);
    }
    const w = q.out;
    if (q.count > 0) w.byte(COMMA);
    q.lastIdAt = w.pos + ENTRY_START.length;
    w.raw(beforeDigits);
    w.hex4(digits);
    w.raw(afterDigits);
    w.string(entry.query);
    w.raw(KEY.userKey);
    w.nullable(entry.user_key);
    w.raw(KEY.action);
    w.nullable(entry.action);
    w.raw(KEY.resourceType);
    w.nullable(entry.resource_type);
    w.raw(KEY.resourceKey);
    w.nullable(entry.resource_key);
    w.raw(KEY.tenant);
    w.nullable(entry.tenant);
    const d = entry.decision;
    w.raw(d === true ? DECISION_REASON.true : d === false ? DECISION_REASON.false : DECISION_REASON.null);
    writeReason(w, entry.reason);
    if (input === "null" && result === "null") {
      w.raw(NO_INPUT_NOR_RESULT);
    } else {
      w.raw(KEY.input);
      w.text(input);
      w.raw(KEY.result);
      w.text(result);
      w.raw(KEY.revision);
    }
    w.number(entry.revision);
    w.raw(KEY.latency);
    w.number(entry.latency_us);
    w.byte(CLOSE_BRACE);
    q.count += 1;
  }

  function seal(q: Queue): void {
    const w = q.out;
    w.byte(CLOSE_BRACKET);
    // A copy of the bytes (not zero-filled first, as `Buffer.from` would): no string of the whole chunk on this
    // thread's heap, nor UTF-8 decoding (a string that large would live in the old generation, to be freed by a
    // full collection).
    const entries = Buffer.allocUnsafeSlow(w.pos);
    w.buf.copy(entries, 0, 0, w.pos);
    backlog.push({
      environmentId: q.environmentId,
      entries,
      count: q.count,
      firstId: w.buf.toString("latin1", FIRST_ID, FIRST_ID + ID_LENGTH),
      lastId: w.buf.toString("latin1", q.lastIdAt, q.lastIdAt + ID_LENGTH),
    });
    w.pos = 1;
    q.count = 0;
  }

  /** Makes every queue's entries into a chunk; a few buffers of ordinary size are kept for the next ones. */
  function take(): void {
    encodeHeld();
    for (const q of queues.values()) {
      if (q.count > 0) seal(q);
      if (spare.length < 8 && q.out.buf.length <= 1024 * 1024) spare.push(q.out.buf);
    }
    queues = new Map();
  }

  /** Ships what was queued when it started; entries recorded meanwhile wait for the next tick. */
  async function drain(): Promise<void> {
    take();
    const shipping = backlog;
    backlog = [];
    for (const [i, chunk] of shipping.entries()) {
      try {
        await options.sink(chunk);
        failures = 0;
      } catch (error) {
        options.onError?.(error);
        // Retried on the next ticks; after five failures in a row the chunk is given up, unless the sink is
        // only away. Chunks sealed meanwhile are newer: they go after.
        if (options.retryable?.(error) || ++failures < 5) {
          backlog = shipping.slice(i).concat(backlog);
          return;
        }
        failures = 0;
        dropped += chunk.count;
      }
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
        // The oldest chunk waiting goes; when every entry is in one being shipped, this one does.
        if (backlog.length === 0) take();
        const oldest = backlog.shift();
        const count = oldest ? oldest.count : 1;
        dropped += count;
        if (!oldest) return;
        pending -= count;
      }
      pending += 1;
      const now = Date.now();
      if (now > clock) clock = now;
      const i = heldCount++;
      held[i] = entry;
      heldEnvironments[i] = source.environmentId;
      heldTimes[i] = clock;
      // The request and the answer are the caller's objects: encoded now, as they are.
      heldInputs[i] = jsonValue(entry.input);
      heldResults[i] = jsonValue(entry.result);
      // After the I/O callbacks of this turn of the event loop, so the check whose entry fills the run does not
      // wait for it; entries recorded before then join the run.
      if (heldCount === HELD) setImmediate(encodeHeld);
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
