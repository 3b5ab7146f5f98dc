import path from "node:path";
import type { Insertable } from "kysely";
import type { ApiLogTable } from "../../db/types.ts";
import { createBatcher, type Batcher } from "../../lib/batcher.ts";
import { openSpool, type Spool } from "../../lib/spool.ts";
import type { DecisionLogChunk } from "../../pdp/storage.ts";
import { apiLines, decisionLines, type ExportedLog } from "./records.ts";
import { fileSink, httpSink, otlpSink, RefusedError, type HttpSinkOptions, type Ship } from "./sinks.ts";

/*
 * Log export: the decision log and the API log, as they are written to the database, also go to the configured
 * sinks (an NDJSON file, an HTTP endpoint, OTLP logs). It is a tee after the logs' own sinks: the decision log's
 * (src/domain/decision-log/database-sink.ts, and the ingest of standalone PDPs' chunks) and the API log writer's
 * (src/domain/api-log-writer.ts) hand what they stored here. Each export sink has the shared batcher in front
 * (records wait in memory, bounded, a batch a second) and a spool on disk behind (src/lib/spool.ts): what the sink
 * cannot take waits in files, across restarts, and is shipped oldest first when it answers, so delivery is at least
 * once; past the spool's bound the oldest files are dropped, counted.
 */

export interface LogExportOptions {
  /** Where each sink keeps its spool (a folder per sink). */
  spoolDir: string;
  /** Bytes on disk each sink's spool holds at most. */
  spoolBytes: number;
  logs: readonly ExportedLog[];
  file?: { path: string; maxBytes: number; keep: number } | undefined;
  http?: HttpSinkOptions | undefined;
  otlp?: boolean;
  /** How often what waits in memory is shipped (default 1000 ms). */
  flushIntervalMs?: number;
  /** Records waiting in memory per sink (default 100,000): past it new ones are dropped, counted. */
  maxQueue?: number;
  log: { warn(obj: object, msg: string): void };
}

/** One sink's figures for /metrics. */
export interface ExportSinkStats {
  sink: string;
  /** Records waiting (in memory and on disk). */
  queued: number;
  shipped: number;
  dropped: number;
  failures: number;
  spoolBytes: number;
  /** Seconds the oldest record waiting has waited (0 when none). */
  lagSeconds: number;
}

export interface LogExport {
  readonly enabled: boolean;
  /** A decision log chunk the database stored. */
  decisions(chunk: DecisionLogChunk): void;
  /** API log rows the database stored. */
  apiCalls(rows: Insertable<ApiLogTable>[]): void;
  stats(): ExportSinkStats[];
  /** Ships what waits in memory (tests). */
  flush(): Promise<void>;
  /** What waits in memory goes to the spools' files (shipped at the next start), without waiting for the sinks. */
  close(): Promise<void>;
}

export const noLogExport: LogExport = {
  enabled: false,
  decisions() {},
  apiCalls() {},
  stats: () => [],
  flush: async () => {},
  close: async () => {},
};

interface Lines {
  bytes: Buffer;
  count: number;
  at: number;
}

/** The sinks the options name, each behind its batcher and spool. */
export async function openLogExport(options: LogExportOptions): Promise<LogExport> {
  const ships: [string, Ship][] = [];
  if (options.file)
    ships.push(["file", fileSink(options.file.path, options.file.maxBytes, options.file.keep)]);
  if (options.http) ships.push(["http", httpSink(options.http)]);
  if (options.otlp) ships.push(["otlp", await otlpSink()]);
  if (ships.length === 0 || options.logs.length === 0) return noLogExport;
  const sinks = ships.map(([name, ship]) => exportSink(name, ship, options));
  const exports = new Set(options.logs);
  // Called by the logs' writers once a batch is stored: it must not throw (they would write the batch again).
  const tee = (make: () => Buffer, count: number) => {
    if (count === 0) return;
    try {
      const lines = { bytes: make(), count, at: Date.now() };
      for (const sink of sinks) sink.add(lines);
    } catch (err) {
      options.log.warn({ err, records: count }, "log export: could not export records");
    }
  };
  return {
    enabled: true,
    decisions(chunk) {
      if (exports.has("decision")) tee(() => decisionLines(chunk), chunk.count);
    },
    apiCalls(rows) {
      if (exports.has("api")) tee(() => apiLines(rows), rows.length);
    },
    stats: () => sinks.map((s) => s.stats()),
    flush: async () => void (await Promise.all(sinks.map((s) => s.batcher.flush()))),
    close: async () => void (await Promise.all(sinks.map((s) => s.close()))),
  };
}

/** One sink: the batcher in memory, then the spool on disk, then `ship`. */
function exportSink(name: string, ship: Ship, options: LogExportOptions) {
  const spool: Spool = openSpool({
    dir: path.join(options.spoolDir, name),
    maxBytes: options.spoolBytes,
    ship,
    refused: (error) => error instanceof RefusedError,
    name: `log export to ${name}`,
    sink: `the ${name} sink`,
    log: (message) => options.log.warn({ sink: name }, message),
  });
  /** When each batch waiting in memory was made, oldest first (for the lag). */
  const times: number[] = [];
  const batcher: Batcher<Lines> = createBatcher<Lines>({
    async send(batch) {
      const count = batch.reduce((n, l) => n + l.count, 0);
      await spool.accept({ bytes: Buffer.concat(batch.map((l) => l.bytes)), count, tag: undefined });
      times.splice(0, batch.length);
    },
    flushIntervalMs: options.flushIntervalMs ?? 1000,
    batchSize: 100,
    maxQueue: options.maxQueue ?? 100_000,
    weight: (lines) => lines.count,
    dropWhenFull: "newest",
    onFailure: (failure) => {
      // Only the disk can fail here (the spool keeps what the sink cannot take).
      options.log.warn({ sink: name, err: failure.error }, "log export: could not spool records");
      if (failure.gaveUp) times.splice(0, failure.batch.length);
    },
  });
  return {
    batcher,
    add(lines: Lines) {
      const dropped = batcher.dropped;
      batcher.add(lines);
      if (batcher.dropped === dropped) times.push(lines.at);
    },
    stats(): ExportSinkStats {
      const s = spool.stats;
      const oldest = Math.min(s.oldestAt ?? Infinity, times[0] ?? Infinity);
      return {
        sink: name,
        queued: batcher.queued + s.pendingEntries,
        shipped: s.shipped,
        dropped: batcher.dropped + s.dropped,
        failures: s.failures,
        spoolBytes: s.pendingBytes,
        lagSeconds: oldest === Infinity ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
      };
    },
    async close() {
      await spool.close();
      await batcher.close();
    },
  };
}
