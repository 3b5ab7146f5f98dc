import fs from "node:fs";
import path from "node:path";
import type { ReadableLogRecord } from "@opentelemetry/sdk-logs";
import { parseLines, asJsonArray } from "./records.ts";

/*
 * Where exported records go. Each sink ships NDJSON bytes (one record per line) and resolves once the sink holds
 * them; a failure is retried from the spool (src/lib/spool.ts), unless it is a `RefusedError` (retrying would send
 * the same bytes to the same answer).
 */

export type Ship = (bytes: Uint8Array<ArrayBuffer>) => Promise<void>;

/** The sink answered that it will never take these records. */
export class RefusedError extends Error {}

/**
 * Appends to `file`, synced before it resolves; once the file would pass `maxBytes` it is renamed `file.1` (the
 * older ones shifted up to `file.<keep>`, the oldest deleted) and a new one started.
 */
export function fileSink(file: string, maxBytes: number, keep: number): Ship {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let size: number | undefined;
  return async (bytes) => {
    size ??= fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    if (size > 0 && size + bytes.length > maxBytes) {
      await rotate(file, keep);
      size = 0;
    }
    const handle = await fs.promises.open(file, "a");
    try {
      await handle.writeFile(bytes);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    size += bytes.length;
  };
}

async function rotate(file: string, keep: number): Promise<void> {
  await fs.promises.rm(`${file}.${keep}`, { force: true });
  for (let i = keep - 1; i >= 1; i--) {
    await fs.promises.rename(`${file}.${i}`, `${file}.${i + 1}`).catch(ignoreMissing);
  }
  if (keep > 0) await fs.promises.rename(file, `${file}.1`);
  else await fs.promises.rm(file, { force: true });
}

const ignoreMissing = (e: unknown) => {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
};

export interface HttpSinkOptions {
  url: string;
  /** `ndjson`: the lines as they are (application/x-ndjson); `json`: one JSON array. */
  format: "ndjson" | "json";
  headers: Record<string, string>;
  timeoutMs?: number;
}

/** Statuses that mean "not now" rather than "never". */
const RETRY_STATUSES = new Set([408, 425, 429]);

/** One POST per batch; a 2xx answer is success, another 4xx (but 408, 425, 429) a refusal. */
export function httpSink(options: HttpSinkOptions): Ship {
  const json = options.format === "json";
  const contentType = json ? "application/json" : "application/x-ndjson";
  return async (bytes) => {
    const response = await fetch(options.url, {
      method: "POST",
      headers: { ...options.headers, "content-type": contentType },
      body: json ? asJsonArray(bytes) : bytes,
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    await response.body?.cancel();
    if (response.ok) return;
    const why = `the HTTP sink answered ${response.status}`;
    if (response.status >= 400 && response.status < 500 && !RETRY_STATUSES.has(response.status))
      throw new RefusedError(why);
    throw new Error(why);
  };
}

/** `name=value,name=value` (as OTEL_EXPORTER_OTLP_HEADERS), values URL-encoded. */
export function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

const SEVERITY = { INFO: 9, WARN: 13, ERROR: 17 } as const;

function severityOf(record: Record<string, unknown>): keyof typeof SEVERITY {
  const status = typeof record["status"] === "number" ? record["status"] : 0;
  if (record["log"] !== "api" || status < 400) return "INFO";
  return status >= 500 ? "ERROR" : "WARN";
}

/**
 * OpenTelemetry logs over OTLP/HTTP with the official exporter, which reads its endpoint, headers and timeout from
 * the standard variables (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT with /v1/logs). Each
 * record is one log record: its fields as the body, `gatehouse.log` naming the log. Loaded only when configured.
 */
export async function otlpSink(): Promise<Ship> {
  const [{ OTLPLogExporter }, { serviceResource }] = await Promise.all([
    import("@opentelemetry/exporter-logs-otlp-http"),
    import("../../lib/otel-resource.ts"),
  ]);
  const exporter = new OTLPLogExporter();
  const resource = serviceResource();
  const scope = { name: "gatehouse.log-export" };
  const toLogRecord = (record: Record<string, unknown>): ReadableLogRecord => {
    const ms = Date.parse(String(record["timestamp"]));
    const hrTime: [number, number] = [Math.floor(ms / 1000), (ms % 1000) * 1e6];
    const severity = severityOf(record);
    return {
      hrTime,
      hrTimeObserved: hrTime,
      severityText: severity,
      severityNumber: SEVERITY[severity],
      body: record as ReadableLogRecord["body"],
      eventName: `gatehouse.${String(record["log"])}`,
      resource,
      instrumentationScope: scope,
      attributes: { "gatehouse.log": String(record["log"]) },
      droppedAttributesCount: 0,
    };
  };
  return (bytes) =>
    new Promise((resolve, reject) => {
      exporter.export(parseLines(bytes).map(toLogRecord), (result) => {
        if (result.code === 0) return resolve();
        const code = (result.error as { code?: unknown } | undefined)?.code;
        const why = `the OTLP endpoint failed: ${result.error?.message ?? "unknown error"}`;
        reject(code === 400 || code === 413 ? new RefusedError(why) : new Error(why));
      });
    });
}
