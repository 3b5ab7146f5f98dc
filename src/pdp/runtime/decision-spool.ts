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

/**
 * The standalone PDP's decision log while the control plane is away: chunks it could not ship go to files in
 * `dir`, one per chunk, and are shipped oldest first when it answers again; while files wait, new chunks queue
 * behind them, so the control plane receives the entries in the order they were made. A file is written to a
 * temporary name, synced and renamed (and the folder synced), so a crash leaves either the whole file or none, and
 * the files survive a restart. The control plane stores a chunk shipped twice (a crash between its answer and the
 * file's deletion) once.
 */
export function openDecisionSpool(options: DecisionSpoolOptions): DecisionSpool {
  const { dir, maxBytes } = options;
  fs.mkdirSync(dir, { recursive: true });
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
  const stats: DecisionSpoolStats = {
    spooled: 0,
    dropped: 0,
    shipped: 0,
    pendingEntries: files.reduce((n, f) => n + f.count, 0),
    pendingBytes: files.reduce((n, f) => n + f.bytes, 0),
  };
  let shipping: Promise<void> | undefined;
  /** The file being shipped: never deleted for the bound meanwhile. */
  let inFlight: SpoolFile | undefined;
  let closed = false;
  let backoff = MIN_BACKOFF_MS;
  let sleeping: { timer: NodeJS.Timeout; resolve: () => void } | undefined;

  function forget(file: SpoolFile): void {
    const at = files.indexOf(file);
    if (at < 0) return;
    files.splice(at, 1);
    stats.pendingEntries -= file.count;
    stats.pendingBytes -= file.bytes;
    fs.rmSync(path.join(dir, file.name), { force: true });
  }

  function drop(count: number, why: string): void {
    stats.dropped += count;
    options.log?.(`decision log: dropped ${count} entries (${why})`);
  }

  async function write(chunk: DecisionLogChunk): Promise<void> {
    if (chunk.entries.length > maxBytes) {
      drop(chunk.count, `the control plane is unreachable and the spool holds at most ${maxBytes} bytes`);
      return;
    }
    sequence += 1;
    const name = `${String(sequence).padStart(12, "0")}-${chunk.count}-${encodeURIComponent(chunk.pdpId)}.json`;
    const tmp = path.join(dir, `${name}.tmp`);
    const handle = await fs.promises.open(tmp, "w");
    try {
      await handle.writeFile(chunk.entries);
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
    files.push({ name, count: chunk.count, bytes: chunk.entries.length, pdpId: chunk.pdpId });
    stats.spooled += chunk.count;
    stats.pendingEntries += chunk.count;
    stats.pendingBytes += chunk.entries.length;
    // Oldest first, past the bound; the file being shipped stays (it may be stored already).
    while (stats.pendingBytes > maxBytes) {
      const oldest = files.find((f) => f !== inFlight);
      if (!oldest) break;
      forget(oldest);
      drop(oldest.count, `the spool is over its bound of ${maxBytes} bytes`);
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        sleeping = undefined;
        resolve();
      }, ms);
      sleeping = { timer, resolve };
    });
  }

  /** Ships the files oldest first, one at a time, until none is left (or the spool closes). */
  function drain(): Promise<void> {
    shipping ??= (async () => {
      while (!closed && files.length > 0) {
        const file = files[0] as SpoolFile;
        let failed = false;
        inFlight = file;
        try {
          const entries = await fs.promises.readFile(path.join(dir, file.name));
          await options.ship(entries, file.pdpId);
          stats.shipped += file.count;
          backoff = MIN_BACKOFF_MS;
          forget(file);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") {
            forget(file);
            drop(file.count, "its spool file was removed");
          } else if (options.refused(error)) {
            forget(file);
            drop(file.count, `the control plane refused them: ${String(error)}`);
          } else {
            failed = true;
          }
        } finally {
          inFlight = undefined;
        }
        // Between attempts the file may go for the bound like any other.
        if (failed) {
          await sleep(backoff);
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        }
      }
    })().finally(() => (shipping = undefined));
    return shipping;
  }

  function wake(): void {
    backoff = MIN_BACKOFF_MS;
    if (sleeping) {
      clearTimeout(sleeping.timer);
      sleeping.resolve();
      sleeping = undefined;
    }
  }

  if (files.length > 0) void drain();

  return {
    async accept(chunk) {
      if (closed || files.length > 0) {
        await write(chunk);
        if (!closed) void drain();
        return;
      }
      try {
        await options.ship(chunk.entries, chunk.pdpId);
        stats.shipped += chunk.count;
      } catch (error) {
        if (options.refused(error)) {
          drop(chunk.count, `the control plane refused them: ${String(error)}`);
          return;
        }
        await write(chunk);
        void drain();
      }
    },
    wake,
    stats,
    async close() {
      closed = true;
      wake();
      // A shipment under way ends by itself (bounded by its timeout); its file stays until it succeeded.
    },
  };
}
