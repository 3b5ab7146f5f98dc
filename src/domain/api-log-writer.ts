import type { Insertable, Kysely } from "kysely";
import type { ApiLogTable, Database } from "../db/types.ts";
import type { DatabaseOutage } from "../db/outage.ts";
import { redactJsonText, redactQuery, redactText, secretValues, truncateText } from "../lib/redact.ts";
import type { Principal } from "../lib/access.ts";
import { toTimestamp } from "../lib/time.ts";
import { createBatcher, type BatchFailure } from "../lib/batcher.ts";
import { gzipText } from "../lib/gzip-text.ts";
import { findPrincipal } from "./api-key-records.ts";
import { findEnvironment } from "./environment-records.ts";
import { findProject } from "./project-records.ts";
import { insertEvents, purgeBefore } from "./api-log.repo.ts";

/*
 * The API log's writer: the api-log plugin captures each external call; this redacts, bounds and stores them in
 * batches, off the request. The history module reads what it wrote.
 */

/** Deletes the records older than the retention; 0 days keeps the log forever. */
export async function purgeExpired(db: Kysely<Database>, retentionDays: number, nowMs = Date.now()) {
  if (retentionDays <= 0) return 0;
  return purgeBefore(db, toTimestamp(new Date(nowMs - retentionDays * 86_400_000)));
}

/** One external call as the api-log plugin captured it, before redaction (done by the writer, off the request). */
export interface CapturedCall {
  id: string;
  requestId: string;
  timestamp: string;
  method: string;
  /** path and query as received */
  url: string;
  status: number;
  durationMs: number;
  clientIp: string;
  principal: Principal | null;
  /** proj_id and env_id path parameters, when the route has them */
  projectRef: string | undefined;
  envRef: string | undefined;
  /** The rows those refs named when the request resolved them (none: it stopped before, e.g. a 401 or a 404). */
  resolved?: { project: Named; environment: Named | undefined };
  /** the parsed JSON body, when there was one */
  requestBody: unknown;
  responseBody: string | null;
  /** what followed the scheme in the Authorization header: hidden wherever it appears */
  bearer: string | undefined;
}

export interface Named {
  id: string;
  key: string;
}

const sameRef = (ref: string, named: Named | null): named is Named =>
  named !== null && (ref.toLowerCase() === named.id || ref === named.key);

const named = (id: string | null, key: string | null): Named | null =>
  id !== null && key !== null ? { id, key } : null;

/**
 * The project and environment a call is recorded under: the ones its path names (resolved in the caller's
 * organization; a name that resolves to nothing leaves the field empty), else the calling key's own. The rows the
 * request itself resolved are used as they are; only a call that stopped before (a 401, a 404) is looked up.
 */
async function scopesOf(db: Kysely<Database>, calls: CapturedCall[]) {
  const memo = new Map<string, Promise<Named | null>>();
  const once = (key: string, load: () => Promise<Named | undefined>) => {
    let hit = memo.get(key);
    if (!hit) {
      hit = load().then((row) => (row ? { id: row.id, key: row.key } : null));
      memo.set(key, hit);
    }
    return hit;
  };
  return Promise.all(
    calls.map(async (call) => {
      const p = call.principal;
      if (!p) return { project: null, environment: null };
      let project = named(p.projectId, p.projectKey);
      let environment = named(p.environmentId, p.environmentKey);
      const { projectRef, envRef } = call;
      const { resolved } = call;
      if (projectRef !== undefined && !sameRef(projectRef, project)) {
        project = resolved
          ? resolved.project
          : await once(`${p.organizationId}|${projectRef}`, () =>
              findProject(db, p.organizationId, projectRef),
            );
        environment = null;
      }
      if (envRef !== undefined && !sameRef(envRef, environment)) {
        const inProject = project;
        if (resolved?.environment) environment = resolved.environment;
        else
          environment = inProject
            ? await once(`${inProject.id}/${envRef}`, () => findEnvironment(db, inProject.id, envRef))
            : null;
      }
      return { project, environment };
    }),
  );
}

/**
 * A call answered 503 because its key could not be looked up (the database was away) is recorded under the key's
 * organization, looked up now that the database answers: only for the record, the call was refused all the same.
 */
async function attributeUnavailable(db: Kysely<Database>, calls: CapturedCall[]): Promise<void> {
  const found = new Map<string, Principal | null>();
  for (const call of calls) {
    const secret = call.bearer;
    if (call.principal || call.status !== 503 || secret === undefined) continue;
    if (!found.has(secret)) found.set(secret, await findPrincipal(db, secret));
    call.principal = found.get(secret) ?? null;
  }
}

const MAX_PATH_BYTES = 4096;

function stringify(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  try {
    return JSON.stringify(value);
  } catch {
    return null;
  }
}

/** The stored form of a call: secrets redacted, bodies bounded, no NUL (PostgreSQL text cannot hold one). */
export function toLogRow(
  call: CapturedCall,
  scope: { project: Named | null; environment: Named | null },
  maxBodyBytes: number,
): Insertable<ApiLogTable> {
  const secrets = secretValues(call.bearer);
  const cut = call.url.indexOf("?");
  const path = cut === -1 ? call.url : call.url.slice(0, cut);
  const query = cut === -1 ? "" : call.url.slice(cut + 1);
  const body = (text: string | null) =>
    text === null || text === ""
      ? null
      : truncateText(redactJsonText(text, secrets).replaceAll("\0", ""), maxBodyBytes);
  return {
    id: call.id,
    organization_id: call.principal?.organizationId ?? null,
    project_id: scope.project?.id ?? null,
    project_key: scope.project?.key ?? null,
    environment_id: scope.environment?.id ?? null,
    environment_key: scope.environment?.key ?? null,
    timestamp: call.timestamp,
    method: call.method,
    path: truncateText(redactText(path, secrets), MAX_PATH_BYTES),
    query: query === "" ? null : truncateText(redactQuery(query, secrets), MAX_PATH_BYTES),
    status: call.status,
    success: call.status < 400 ? 1 : 0,
    duration_ms: Math.round(call.durationMs * 1000) / 1000,
    client_ip: call.clientIp,
    request_id: call.requestId,
    actor_type: call.principal ? (call.principal.member ? "member" : "api_key") : "anonymous",
    actor_id: call.principal?.keyId ?? null,
    actor_display_name: call.principal?.keyName ?? null,
    // A body sent as text (JSON as text/plain, as fetch does for a string) is stored as its text, so that JSON in
    // it is redacted by name like any JSON body.
    request_body: body(typeof call.requestBody === "string" ? call.requestBody : stringify(call.requestBody)),
    response_body: body(call.responseBody),
  };
}

/** Response bodies from this size (UTF-16 units, about bytes) are stored gzip-compressed; a single write's are not. */
export const COMPRESS_FROM = 2048;

/**
 * The row as stored: a large response body compressed (a page of 100 users: 45 KB to about 10 KB), which keeps the
 * insert, the database's own work and its disk small. The compression runs on libuv's thread pool.
 */
export async function packed(row: Insertable<ApiLogTable>): Promise<Insertable<ApiLogTable>> {
  const text = row.response_body;
  if (typeof text !== "string" || text.length < COMPRESS_FROM) return { ...row, response_body_gzip: null };
  return { ...row, response_body: null, response_body_gzip: await gzipText(text) };
}

export interface Logger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface ApiLogWriterOptions {
  /** where the writer looks up keys, projects and environments */
  db: Kysely<Database>;
  /** where it inserts (on a SQLite file, a connection on a thread of its own); `db` when unset */
  writeDb?: Kysely<Database>;
  log: Logger;
  /** how often queued records are written */
  flushIntervalMs: number;
  maxBodyBytes: number;
  /** records per insert; reaching it also starts a write at once */
  batchSize?: number;
  /** records held while the database is slow or away; past it new records are dropped (and counted) */
  maxQueue?: number;
  /** tries per batch before it is dropped with an error line */
  maxAttempts?: number;
  /** While the database is unavailable batches are kept (the queue is bounded) and the outage is logged once. */
  outage?: DatabaseOutage;
  /** Rows once stored (log export): redacted as stored. */
  exported?: (rows: Insertable<ApiLogTable>[]) => void;
}

export interface ApiLogWriter {
  enqueue(call: CapturedCall): void;
  /** Writes, once each, the batches queued so far (tests); a batch that fails waits for the timer. */
  drain(): Promise<void>;
  /** Stops the timer and writes everything, a failing batch retried (an unavailable database too) then dropped. */
  close(): Promise<void>;
  /** Records waiting to be written, and records dropped since the start (queue full, or a batch given up on). */
  stats(): { queued: number; dropped: number };
}

/** How often a batch is tried again while the database is unavailable. */
const OUTAGE_RETRY_MS = 1000;
/** At most one "queue full" line this often. */
const OVERFLOW_REPORT_MS = 10_000;

/**
 * Queues captured calls and writes them in batches through the shared batcher (src/lib/batcher.ts), off the
 * request path: enqueue only pushes to an array, and nothing the writer does can fail or delay a request. A batch
 * that fails is retried (backing off) up to `maxAttempts` times, then dropped with an error line; while the
 * database is unavailable batches wait for it; past `maxQueue` new records are dropped.
 */
export function createApiLogWriter(opts: ApiLogWriterOptions): ApiLogWriter {
  const { db, log, maxBodyBytes } = opts;
  const writeDb = opts.writeDb ?? db;
  let overflow = 0;
  let overflowReportedAt = 0;

  async function writeBatch(batch: CapturedCall[]): Promise<void> {
    await attributeUnavailable(db, batch);
    const scopes = await scopesOf(db, batch);
    const rows = batch.map((call, i) =>
      toLogRow(call, scopes[i] ?? { project: null, environment: null }, maxBodyBytes),
    );
    await insertEvents(writeDb, await Promise.all(rows.map(packed)));
    opts.exported?.(rows);
  }

  function reportFailure({
    error: err,
    batch,
    attempts,
    retryable,
    gaveUp,
    retryInMs,
  }: BatchFailure<CapturedCall>) {
    // An outage is logged once, by `outage`.
    if (gaveUp) {
      log.error(
        {
          ...(!retryable && { err }),
          dropped: batch.length,
          attempts,
          from: batch[0]?.timestamp,
          to: batch.at(-1)?.timestamp,
        },
        "API log: dropping a batch of records that could not be written",
      );
    } else if (!retryable) {
      log.warn({ err, records: batch.length, attempts, retryInMs }, "API log: write failed; will retry");
    }
  }

  function reportOverflow(count: number) {
    overflow += count;
    const at = Date.now();
    if (at - overflowReportedAt > OVERFLOW_REPORT_MS) {
      log.error({ dropped: overflow, maxQueue }, "API log: queue full; dropping new records");
      overflowReportedAt = at;
      overflow = 0;
    }
  }

  const maxQueue = opts.maxQueue ?? 50_000;
  const calls = createBatcher<CapturedCall>({
    send: writeBatch,
    flushIntervalMs: opts.flushIntervalMs,
    batchSize: opts.batchSize ?? 500,
    maxQueue,
    dropWhenFull: "newest",
    retryable: (err) => opts.outage?.report(err, log) ?? false,
    retryableDelayMs: OUTAGE_RETRY_MS,
    maxAttempts: opts.maxAttempts ?? 5,
    onFailure: reportFailure,
    onOverflow: reportOverflow,
  });

  return {
    enqueue: calls.add,
    drain: calls.flush,
    close: calls.close,
    stats: () => ({ queued: calls.queued, dropped: calls.dropped }),
  };
}
