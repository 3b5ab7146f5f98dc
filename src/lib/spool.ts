import fs from "node:fs";
import path from "node:path";

/*
 * A spool on disk in front of a sink that may be away: what the sink cannot take waits in files, survives restarts,
 * and is shipped oldest first when it answers again. The standalone PDP's decision log (src/pdp/runtime/
 * decision-spool.ts) and the log export sinks (src/domain/log-export/) each keep one.
 */

/** Counters and sizes of a spool, for /metrics. */
export interface SpoolStats {
  /** Entries written to disk because the sink could not take them. */
  spooled: number;
  /** Entries given up: the oldest files past the size bound, and parcels the sink refused for good. */
  dropped: number;
  /** Entries the sink accepted, at once or from disk. */
  shipped: number;
  /** Shipments that failed (the sink away or refusing). */
  failures: number;
  /** Entries and bytes on disk now. */
  pendingEntries: number;
  pendingBytes: number;
  /** When the oldest file on disk was written (ms since the epoch), undefined when none waits. */
  oldestAt: number | undefined;
}

/** What a spool takes: `count` entries in `bytes`, with a tag kept with them (the PDP that made them). */
export interface Parcel {
  bytes: Uint8Array<ArrayBuffer>;
  count: number;
  tag: string | undefined;
}

export interface Spool {
  /** Ships the parcel, or keeps it on disk when the sink cannot take it. */
  accept(parcel: Parcel): Promise<void>;
  /** The sink answered again: try the files now rather than after the current backoff. */
  wake(): void;
  readonly stats: SpoolStats;
  close(): Promise<void>;
}

export interface SpoolOptions {
  /** The folder of the files (created when missing). */
  dir: string;
  /** Past this many bytes on disk the oldest files are deleted (their entries counted as dropped); 0 keeps none. */
  maxBytes: number;
  /** Sends one parcel's bytes to the sink, with its tag (undefined when it had none). */
  ship(bytes: Uint8Array<ArrayBuffer>, tag: string | undefined): Promise<void>;
  /** Whether a failure of `ship` will not get better by retrying (the sink refused the entries). */
  refused(error: unknown): boolean;
  /** What the spool is for and where it ships, in log lines ("decision log", "the control plane"). */
  name: string;
  sink: string;
  log?: (message: string) => void;
}

interface SpoolFile {
  name: string;
  count: number;
  bytes: number;
  tag: string | undefined;
  at: number;
}

/**
 * `<sequence>-<entries>-<tag>.json`: the sequence orders the files, the count is known without reading them, the
 * tag (URI-encoded) is the parcel's (the decision log's: the PDP that made the entries; older versions left it out).
 */
const FILE_RE = /^(\d{12})-(\d+)(?:-(.+))?\.json$/;
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5000;

/** The files a spool left in `dir`, oldest first, and the greatest sequence among them. */
function readSpoolFolder(dir: string): { files: SpoolFile[]; sequence: number } {
  const files: SpoolFile[] = [];
  let sequence = 0;
  for (const name of fs.readdirSync(dir).sort()) {
    const match = FILE_RE.exec(name);
    if (name.endsWith(".tmp")) {
      // A write a crash interrupted: never renamed, so never counted as spooled.
      fs.rmSync(path.join(dir, name), { force: true });
    } else if (match) {
      const { size: bytes, mtimeMs: at } = fs.statSync(path.join(dir, name));
      files.push({ name, count: Number(match[2]), bytes, tag: match[3] && decodeURIComponent(match[3]), at });
      sequence = Math.max(sequence, Number(match[1]));
    }
  }
  return { files, sequence };
}

/**
 * Writes `bytes` as `dir/name` so that a crash leaves the whole file or none: to a temporary name, synced, renamed,
 * and the folder synced.
 */
async function writeWhole(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const tmp = path.join(dir, `${name}.tmp`);
  const handle = await fs.promises.open(tmp, "w");
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.promises.rename(tmp, path.join(dir, name));
  const folder = await fs.promises.open(dir, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

/** The wait between two tries of a file: doubling up to a bound, cut short (and reset) by `wake`. */
class Backoff {
  #ms = MIN_BACKOFF_MS;
  #sleeping: { timer: NodeJS.Timeout; resolve: () => void } | undefined;

  wait(): Promise<void> {
    const ms = this.#ms;
    this.#ms = Math.min(ms * 2, MAX_BACKOFF_MS);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#sleeping = undefined;
        resolve();
      }, ms);
      this.#sleeping = { timer, resolve };
    });
  }

  reset(): void {
    this.#ms = MIN_BACKOFF_MS;
  }

  wake(): void {
    this.reset();
    if (this.#sleeping) {
      clearTimeout(this.#sleeping.timer);
      this.#sleeping.resolve();
      this.#sleeping = undefined;
    }
  }
}

/**
 * Parcels the sink could not take go to files in `dir`, one per parcel, and are shipped oldest first when it
 * answers again; while files wait, new parcels queue behind them, so the sink receives the entries in the order
 * they were made. A file is written whole or not at all (see `writeWhole`), and the files survive a restart. A
 * parcel may be shipped twice (a crash between the sink's answer and the file's deletion): at least once.
 */
export function openSpool(options: SpoolOptions): Spool {
  fs.mkdirSync(options.dir, { recursive: true });
  const spool = new FileSpool(options, readSpoolFolder(options.dir));
  spool.shipFiles();
  // Functions a caller may pass on alone (the decision logger's sink is `accept`).
  return {
    accept: (parcel) => spool.accept(parcel),
    wake: () => spool.wake(),
    stats: spool.stats,
    close: () => spool.close(),
  };
}

class FileSpool {
  readonly stats: SpoolStats;
  #files: SpoolFile[];
  #sequence: number;
  /** Whether the files are being shipped (one run at a time). */
  #shipping = false;
  /** The file being shipped: never deleted for the bound meanwhile. */
  #inFlight: SpoolFile | undefined;
  #closed = false;
  readonly #backoff = new Backoff();

  constructor(
    private readonly options: SpoolOptions,
    found: { files: SpoolFile[]; sequence: number },
  ) {
    this.#files = found.files;
    this.#sequence = found.sequence;
    this.stats = {
      spooled: 0,
      dropped: 0,
      shipped: 0,
      pendingEntries: found.files.reduce((n, f) => n + f.count, 0),
      pendingBytes: found.files.reduce((n, f) => n + f.bytes, 0),
      failures: 0,
      oldestAt: found.files[0]?.at,
    };
  }

  /** Ships the parcel at once, unless files wait (then it goes behind them) or the sink cannot take it. */
  async accept(parcel: Parcel): Promise<void> {
    if (this.#closed || this.#files.length > 0) {
      await this.#write(parcel);
      this.shipFiles();
      return;
    }
    try {
      await this.options.ship(parcel.bytes, parcel.tag);
      this.stats.shipped += parcel.count;
    } catch (error) {
      this.stats.failures += 1;
      if (this.options.refused(error)) {
        this.#drop(parcel.count, `${this.options.sink} refused them: ${String(error)}`);
        return;
      }
      await this.#write(parcel);
      this.shipFiles();
    }
  }

  wake(): void {
    this.#backoff.wake();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#backoff.wake();
    // A shipment under way ends by itself (bounded by its timeout); its file stays until it succeeded.
  }

  /** Ships the files oldest first, one at a time, until none is left (or the spool closes); one run at a time. */
  shipFiles(): void {
    if (this.#shipping || this.#closed || this.#files.length === 0) return;
    this.#shipping = true;
    void (async () => {
      while (!this.#closed && this.#files.length > 0) {
        // Between tries the file may go for the bound like any other.
        if (!(await this.#shipOldest())) await this.#backoff.wait();
      }
    })().finally(() => (this.#shipping = false));
  }

  /** Tries the oldest file: false when it is kept for another try (the sink did not answer). */
  async #shipOldest(): Promise<boolean> {
    const file = this.#files[0] as SpoolFile;
    this.#inFlight = file;
    try {
      const entries = await fs.promises.readFile(path.join(this.options.dir, file.name));
      await this.options.ship(entries, file.tag);
      this.stats.shipped += file.count;
      this.#backoff.reset();
      this.#forget(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") this.stats.failures += 1;
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.#forget(file);
        this.#drop(file.count, "its spool file was removed");
      } else if (this.options.refused(error)) {
        this.#forget(file);
        this.#drop(file.count, `${this.options.sink} refused them: ${String(error)}`);
      } else {
        return false;
      }
    } finally {
      this.#inFlight = undefined;
    }
    return true;
  }

  /** Keeps the parcel in a file of its own; past the bound the oldest files go. */
  async #write(parcel: Parcel): Promise<void> {
    const { maxBytes } = this.options;
    if (parcel.bytes.length > maxBytes) {
      this.#drop(
        parcel.count,
        `${this.options.sink} is unreachable and the spool holds at most ${maxBytes} bytes`,
      );
      return;
    }
    this.#sequence += 1;
    const tag = parcel.tag === undefined ? "" : `-${encodeURIComponent(parcel.tag)}`;
    const name = `${String(this.#sequence).padStart(12, "0")}-${parcel.count}${tag}.json`;
    await writeWhole(this.options.dir, name, parcel.bytes);
    const at = Date.now();
    this.#files.push({ name, count: parcel.count, bytes: parcel.bytes.length, tag: parcel.tag, at });
    this.stats.oldestAt ??= at;
    this.stats.spooled += parcel.count;
    this.stats.pendingEntries += parcel.count;
    this.stats.pendingBytes += parcel.bytes.length;
    this.#trimToBound();
  }

  /** Oldest first, past the bound; the file being shipped stays (it may be stored already). */
  #trimToBound(): void {
    while (this.stats.pendingBytes > this.options.maxBytes) {
      const oldest = this.#files.find((f) => f !== this.#inFlight);
      if (!oldest) break;
      this.#forget(oldest);
      this.#drop(oldest.count, `the spool is over its bound of ${this.options.maxBytes} bytes`);
    }
  }

  #forget(file: SpoolFile): void {
    const at = this.#files.indexOf(file);
    if (at < 0) return;
    this.#files.splice(at, 1);
    this.stats.pendingEntries -= file.count;
    this.stats.pendingBytes -= file.bytes;
    this.stats.oldestAt = this.#files[0]?.at;
    fs.rmSync(path.join(this.options.dir, file.name), { force: true });
  }

  #drop(count: number, why: string): void {
    this.stats.dropped += count;
    this.options.log?.(`${this.options.name}: dropped ${count} entries (${why})`);
  }
}
