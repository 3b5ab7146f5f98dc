import fs from "node:fs";
import path from "node:path";
import type { DecisionLogChunk } from "../storage.ts";

/** Counters and sizes of a spool, for /metrics. */
export interface DecisionSpoolStats {
  /** Entries written to disk because the control plane could not take them. */
  spooled: number;
  /** Entries given up: the oldest files past the size bound, and chunks the control plane refused for good. */
  dropped: number;
  /** Entries the control plane accepted, at once or from disk. */
  shipped: number;
  /** Entries and bytes on disk now. */
  pendingEntries: number;
  pendingBytes: number;
}

export interface DecisionSpool {
  /** The decision logger's sink: ships the chunk, or keeps it on disk when the control plane cannot take it. */
  accept(chunk: DecisionLogChunk): Promise<void>;
  /** The control plane answered again: try the files now rather than after the current backoff. */
  wake(): void;
  readonly stats: DecisionSpoolStats;
  close(): Promise<void>;
}

export interface DecisionSpoolOptions {
  /** The folder of the files (created when missing). */
  dir: string;
  /** Past this many bytes on disk the oldest files are deleted (their entries counted as dropped); 0 keeps none. */
  maxBytes: number;
  /**
   * Sends one chunk's entries (a JSON array as UTF-8) to the control plane, with the PDP that made them (undefined
   * for files of older versions, whose entries name it).
   */
  ship(entries: Uint8Array<ArrayBuffer>, pdpId: string | undefined): Promise<void>;
  /** Whether a failure of `ship` will not get better by retrying (the control plane refused the entries). */
  refused(error: unknown): boolean;
  log?: (message: string) => void;
}

interface SpoolFile {
  name: string;
  count: number;
  bytes: number;
  pdpId: string | undefined;
}

/**
 * `<sequence>-<entries>-<pdp>.json`: the sequence orders the files, the count is known without reading them, the
 * PDP (URI-encoded) is the one that made the entries, maybe an earlier run of this one (older versions left it out).
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
      const bytes = fs.statSync(path.join(dir, name)).size;
      files.push({ name, count: Number(match[2]), bytes, pdpId: match[3] && decodeURIComponent(match[3]) });
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
 * The standalone PDP's decision log while the control plane is away: chunks it could not ship go to files in
 * `dir`, one per chunk, and are shipped oldest first when it answers again; while files wait, new chunks queue
 * behind them, so the control plane receives the entries in the order they were made. A file is written whole or
 * not at all (see `writeWhole`), and the files survive a restart. The control plane stores a chunk shipped twice
 * (a crash between its answer and the file's deletion) once.
 */
export function openDecisionSpool(options: DecisionSpoolOptions): DecisionSpool {
  fs.mkdirSync(options.dir, { recursive: true });
  const spool = new Spool(options, readSpoolFolder(options.dir));
  spool.shipFiles();
  // Functions a caller may pass on alone (the logger's sink is `accept`).
  return {
    accept: (chunk) => spool.accept(chunk),
    wake: () => spool.wake(),
    stats: spool.stats,
    close: () => spool.close(),
  };
}

class Spool {
  readonly stats: DecisionSpoolStats;
  #files: SpoolFile[];
  #sequence: number;
  /** Whether the files are being shipped (one run at a time). */
  #shipping = false;
  /** The file being shipped: never deleted for the bound meanwhile. */
  #inFlight: SpoolFile | undefined;
  #closed = false;
  readonly #backoff = new Backoff();

  constructor(
    private readonly options: DecisionSpoolOptions,
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
    };
  }

  /** Ships the chunk at once, unless files wait (then it goes behind them) or the control plane cannot take it. */
  async accept(chunk: DecisionLogChunk): Promise<void> {
    if (this.#closed || this.#files.length > 0) {
      await this.#write(chunk);
      this.shipFiles();
      return;
    }
    try {
      await this.options.ship(chunk.entries, chunk.pdpId);
      this.stats.shipped += chunk.count;
    } catch (error) {
      if (this.options.refused(error)) {
        this.#drop(chunk.count, `the control plane refused them: ${String(error)}`);
        return;
      }
      await this.#write(chunk);
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

  /** Tries the oldest file: false when it is kept for another try (the control plane did not answer). */
  async #shipOldest(): Promise<boolean> {
    const file = this.#files[0] as SpoolFile;
    this.#inFlight = file;
    try {
      const entries = await fs.promises.readFile(path.join(this.options.dir, file.name));
      await this.options.ship(entries, file.pdpId);
      this.stats.shipped += file.count;
      this.#backoff.reset();
      this.#forget(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.#forget(file);
        this.#drop(file.count, "its spool file was removed");
      } else if (this.options.refused(error)) {
        this.#forget(file);
        this.#drop(file.count, `the control plane refused them: ${String(error)}`);
      } else {
        return false;
      }
    } finally {
      this.#inFlight = undefined;
    }
    return true;
  }

  /** Keeps the chunk in a file of its own; past the bound the oldest files go. */
  async #write(chunk: DecisionLogChunk): Promise<void> {
    const { maxBytes } = this.options;
    if (chunk.entries.length > maxBytes) {
      this.#drop(
        chunk.count,
        `the control plane is unreachable and the spool holds at most ${maxBytes} bytes`,
      );
      return;
    }
    this.#sequence += 1;
    const name = `${String(this.#sequence).padStart(12, "0")}-${chunk.count}-${encodeURIComponent(chunk.pdpId)}.json`;
    await writeWhole(this.options.dir, name, chunk.entries);
    this.#files.push({ name, count: chunk.count, bytes: chunk.entries.length, pdpId: chunk.pdpId });
    this.stats.spooled += chunk.count;
    this.stats.pendingEntries += chunk.count;
    this.stats.pendingBytes += chunk.entries.length;
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
    fs.rmSync(path.join(this.options.dir, file.name), { force: true });
  }

  #drop(count: number, why: string): void {
    this.stats.dropped += count;
    this.options.log?.(`decision log: dropped ${count} entries (${why})`);
  }
}
