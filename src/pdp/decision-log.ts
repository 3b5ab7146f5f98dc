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
   * Whether `record` records anything: false when the log is off (or paused), so that a caller can skip building
   * the entry and timing the decision.
   */
  readonly active: boolean;
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
 * While `paused` is true, loggers record nothing and are not `active`. Nothing in Gatehouse sets it: it serves the
 * benchmark's A/B of what the log costs a check within one process (bench/lib/log-switch-serve.ts), which the
 * spread between processes alike does not blur.
 */
export const decisionLogSwitch = { paused: false };

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * UUIDv7 ids for decision log entries, cheaper than `newId()` (which costs more than the decision): the time part
 * is formatted once per millisecond, the variant and `rand_a` bits are random once per process, and the last 48
 * bits are a counter from a random start below 2^47, so ids made in one millisecond keep their order (it would
 * take 2^47 decisions to wrap). Given times that never go back, the ids only grow. Only the counter's low 16 bits
 * change from one id to the next; they are written from a table, the rest is kept as text until it changes.
 */
function decisionIds(): (ms: number) => string {
  const random = randomBytes(9);
  const fixed = random.readUIntBE(0, 3);
  const rand = (fixed >> 12).toString(16).padStart(3, "0");
  const variant = (0x8000 | (fixed & 0x3fff)).toString(16);
  // The counter is hi * 2^16 + lo.
  let hi = random.readUIntBE(3, 4) >>> 1;
  let lo = random.readUInt16BE(7);
  let lastMs = -1;
  let stem = "";
  return (ms) => {
    lo += 1;
    if (lo === 0x10000) {
      lo = 0;
      hi = (hi + 1) % 0x100000000;
      lastMs = -1;
    }
    if (ms !== lastMs) {
      lastMs = ms;
      const time = ms.toString(16).padStart(12, "0");
      stem = `${time.slice(0, 8)}-${time.slice(8)}-7${rand}-${variant}-${hi.toString(16).padStart(8, "0")}`;
    }
    return stem + HEX2[lo >> 8] + HEX2[lo & 0xff];
  };
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

// Entries are written field by field rather than with JSON.stringify, which costs several times more for objects
// this small (the test checks the text is byte for byte what JSON.stringify writes).

/** Characters JSON.stringify escapes: quotes, backslashes, controls and (when lone) surrogates. */
// eslint-disable-next-line no-control-regex -- control characters are among those JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

function jsonNullable(s: string | null): string {
  return s === null ? "null" : jsonString(s);
}

function jsonNumber(n: number): string {
  return Number.isFinite(n) ? `${n}` : "null";
}

function jsonReason(value: unknown): string {
  if (value === null) return "null";
  const r = value as Reason;
  switch (r.kind) {
    case "rbac":
      return `{"kind":"rbac","role":${jsonString(r.role)},"tenant":${jsonString(r.tenant)}}`;
    case "deny":
      return `{"kind":"deny","code":"${r.code}","message":${jsonString(r.message)}}`;
    case "rebac": {
      let via = "";
      for (const hop of r.via) {
        via += `${via === "" ? "" : ","}{"role":${jsonString(hop.role)},"instance":${jsonString(hop.instance)},"relation":${jsonString(hop.relation)}}`;
      }
      return `{"kind":"rebac","role":${jsonString(r.role)},"instance":${jsonString(r.instance)},"tenant":${jsonString(r.tenant)},"via":[${via}]}`;
    }
    case "abac":
      return `{"kind":"abac","user_set":${jsonString(r.user_set)},"resource_set":${jsonString(r.resource_set)}}`;
    default:
      return JSON.stringify(value);
  }
}

/** JSON text of a value, or "null": for an entry's input and result, encoded when the entry is recorded. */
const jsonValue = (value: unknown): string => (value === null ? "null" : JSON.stringify(value));

/** An entry's fields after its id, timestamp and PDP, closing its object; `input` and `result` are JSON text. */
function jsonFields(e: DecisionRecord, input: string, result: string): string {
  return (
    `"query":"${e.query}","user_key":${jsonNullable(e.user_key)},"action":${jsonNullable(e.action)},` +
    `"resource_type":${jsonNullable(e.resource_type)},"resource_key":${jsonNullable(e.resource_key)},` +
    `"tenant":${jsonNullable(e.tenant)},"decision":${e.decision},"reason":${jsonReason(e.reason)},` +
    `"input":${input},"result":${result},` +
    `"revision":${jsonNumber(e.revision)},"latency_us":${jsonNumber(e.latency_us)}}`
  );
}

/** One environment's entries since its last chunk, as UTF-8 JSON text: `[`, then the entries split by commas. */
interface Queue {
  environmentId: string;
  buf: Buffer;
  /** Bytes used. */
  length: number;
  count: number;
  firstId: string;
  lastId: string;
}

/**
 * Entries are held, as the caller's objects, until this many have been recorded; then, once the event loop has
 * run the callbacks of its current turn, the held ones are encoded one after another.
 * In a server the code run between two checks (HTTP, routing, the engine) pushes the encoder's code and data out
 * of the CPU's caches: encoded one at a time, an entry cost about 5 µs in a server against 1.4 µs in a loop. In a
 * run they stay warm after the first entry; the logger's share of a server's event loop fell from about 6% to 3%
 * (docs/benchmarks.md). More entries held would keep more of them alive through a young-generation collection.
 */
const HELD = 64;

const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;

/**
 * Recording stamps the entry and holds it; held entries are encoded in runs (see `HELD`) to JSON text whose UTF-8
 * bytes go into their environment's buffer, in the order they were recorded. A full buffer (`maxBatch` entries)
 * becomes a chunk at once, and a timer ships chunks and what the buffers and the held entries hold. A check never
 * waits for the log, and a failing sink costs log entries (counted in `dropped`), never decisions. What a decision
 * allocates lives no longer than a few dozen checks (the bytes go into buffers that are reused), so the log adds
 * little work for the garbage collector, all of it in the young generation. The clock the entries are stamped
 * with never goes back, so each chunk's first and last entries hold its least and greatest ids.
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
  const nextId = decisionIds();
  const timestamp = timestamps();
  const pdp = JSON.stringify({ pdp_id: options.pdpId }).slice(1, -1);
  // What follows an entry's id, up to its own fields: the same for every entry of one millisecond.
  let afterIdMs = -1;
  let afterId = "";

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
    heldCount = 0;
  }

  function encode(
    environmentId: string,
    entry: DecisionRecord,
    ms: number,
    input: string,
    result: string,
  ): void {
    const id = nextId(ms);
    if (ms !== afterIdMs) {
      afterIdMs = ms;
      afterId = `","timestamp":"${timestamp(ms)}",${pdp},`;
    }
    const text = `{"id":"${id}${afterId}${jsonFields(entry, input, result)}`;
    let q = queues.get(environmentId);
    if (q === undefined) {
      const buf = spare.pop() ?? Buffer.allocUnsafe(64 * 1024);
      buf[0] = OPEN_BRACKET;
      q = { environmentId, buf, length: 1, count: 0, firstId: id, lastId: id };
      queues.set(environmentId, q);
    } else if (q.count === maxBatch) {
      seal(q);
    }
    // Room for the text at three bytes a UTF-16 unit (the most UTF-8 takes), a comma and the closing bracket.
    const need = q.length + text.length * 3 + 2;
    if (need > q.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, q.buf.length * 2));
      q.buf.copy(grown, 0, 0, q.length);
      q.buf = grown;
    }
    if (q.count === 0) q.firstId = id;
    else q.buf[q.length++] = COMMA;
    q.length += q.buf.write(text, q.length);
    q.count += 1;
    q.lastId = id;
  }

  function seal(q: Queue): void {
    q.buf[q.length] = CLOSE_BRACKET;
    backlog.push({
      environmentId: q.environmentId,
      // A copy of the bytes: no string of the whole chunk on this thread's heap, nor UTF-8 decoding (a string
      // that large would live in the old generation, to be freed by a full collection).
      entries: Buffer.from(q.buf.subarray(0, q.length + 1)),
      count: q.count,
      firstId: q.firstId,
      lastId: q.lastId,
    });
    q.buf[0] = OPEN_BRACKET;
    q.length = 1;
    q.count = 0;
  }

  /** Makes every queue's entries into a chunk; a few buffers of ordinary size are kept for the next ones. */
  function take(): void {
    encodeHeld();
    for (const q of queues.values()) {
      if (q.count > 0) seal(q);
      if (spare.length < 8 && q.buf.length <= 1024 * 1024) spare.push(q.buf);
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
        failures += 1;
        // Retried on the next ticks; after five failures in a row the chunk is given up.
        if (failures < 5) {
          backlog = shipping.slice(i);
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
      if (decisionLogSwitch.paused) return;
      if (pending >= maxQueue) {
        dropped += 1;
        return;
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
    get active() {
      return !decisionLogSwitch.paused;
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
  active: false,
  flush: async () => {},
  close: async () => {},
  dropped: 0,
};
