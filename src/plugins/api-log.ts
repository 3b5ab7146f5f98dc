import fp from "fastify-plugin";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Insertable, Kysely } from "kysely";
import type { ApiLogTable, Database } from "../db/types.ts";
import type { DatabaseOutage } from "../db/outage.ts";
import { newId } from "../lib/ids.ts";
import { toTimestamp } from "../lib/time.ts";
import { createApiLogWriter, purgeExpired, type CapturedCall } from "../domain/api-log-writer.ts";
import type { EnvScope, ProjectScope } from "../domain/path-scope.ts";
import { schedulePeriodic } from "../lib/periodic.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the response payload, kept by onSend for the API log */
    apiLogResponse: unknown;
    /** true: neither body of this call is stored (it created something that lives in another region) */
    apiLogWithoutBodies: boolean;
  }
  interface FastifyContextConfig {
    /** false: the request body carries a credential (a password, a setup or invite code): never stored */
    apiLogBody?: false;
    /** false: the query string carries a credential (an OpenID provider's code and state): the path alone is kept */
    apiLogQuery?: false;
  }
  interface FastifyInstance {
    apiLog: { flush(): Promise<void>; stats(): { queued: number; dropped: number } };
  }
}

export interface ApiLogOptions {
  db: Kysely<Database>;
  /** Where records are inserted and purged (on a SQLite file, a connection on a thread of its own; closed with the
   * app); `db` when unset. */
  writeDb?: Kysely<Database>;
  /** false: record nothing (the benchmark compares both); history and retention still work */
  enabled: boolean;
  maxBodyBytes: number;
  flushIntervalMs: number;
  retentionDays: number;
  outage?: DatabaseOutage;
  /** Rows once stored, to log export. */
  exported?: (rows: Insertable<ApiLogTable>[]) => void;
}

const PURGE_INTERVAL_MS = 60 * 60 * 1000;

const isApiCall = (url: string) => url.startsWith("/v2/") || url === "/v2";

function textOf(payload: unknown): string | null {
  if (typeof payload === "string") return payload;
  if (Buffer.isBuffer(payload)) return payload.toString("utf8");
  return null;
}

function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = header.replace(/^\s*bearer\s+/i, "").trim();
  return value === "" ? undefined : value;
}

/** The path's rows as the request resolved them: the API log records their ids and keys. */
function resolvedOf(scope: ProjectScope | EnvScope): CapturedCall["resolved"] {
  const { project } = scope;
  const environment = "environment" in scope ? scope.environment : undefined;
  return {
    project: { id: project.id, key: project.key },
    environment: environment && { id: environment.id, key: environment.key },
  };
}

function capture(request: FastifyRequest, reply: FastifyReply): CapturedCall {
  const params = (request.params ?? {}) as Record<string, unknown>;
  const durationMs = reply.elapsedTime;
  return {
    id: newId(),
    requestId: request.id,
    timestamp: toTimestamp(new Date(Date.now() - durationMs)),
    method: request.method,
    url: request.routeOptions.config.apiLogQuery === false ? request.url.split("?")[0]! : request.url,
    status: reply.statusCode,
    durationMs,
    clientIp: request.ip,
    principal: request.principal,
    projectRef: typeof params["proj_id"] === "string" ? params["proj_id"] : undefined,
    envRef: typeof params["env_id"] === "string" ? params["env_id"] : undefined,
    ...(request.pathScope && { resolved: resolvedOf(request.pathScope) }),
    requestBody:
      request.routeOptions.config.apiLogBody === false || request.apiLogWithoutBodies
        ? undefined
        : request.body,
    responseBody: request.apiLogWithoutBodies ? null : textOf(request.apiLogResponse),
    bearer: bearerOf(request.headers.authorization),
  };
}

/**
 * Records every external /v2 call (every status, 401 and 429 included) after its response has gone out, and
 * purges records past the retention every hour (and once at start). Headers are never recorded. The writer
 * redacts and stores in batches; `app.close()` flushes what is queued.
 */
export const apiLogPlugin = fp(
  async (app: FastifyInstance, opts: ApiLogOptions) => {
    const writeDb = opts.writeDb ?? opts.db;
    const writer = createApiLogWriter({
      db: opts.db,
      writeDb,
      log: app.log,
      flushIntervalMs: opts.flushIntervalMs,
      maxBodyBytes: opts.maxBodyBytes,
      ...(opts.outage && { outage: opts.outage }),
      ...(opts.exported && { exported: opts.exported }),
    });
    app.decorate("apiLog", { flush: () => writer.drain(), stats: () => writer.stats() });

    if (opts.enabled) {
      app.decorateRequest("apiLogResponse", null);
      app.decorateRequest("apiLogWithoutBodies", false);
      app.addHook("onSend", (request, _reply, payload, done) => {
        if (isApiCall(request.url)) request.apiLogResponse = payload;
        done(null, payload);
      });
      app.addHook("onResponse", (request, reply, done) => {
        if (isApiCall(request.url)) {
          try {
            writer.enqueue(capture(request, reply));
          } catch (err) {
            request.log.error({ err }, "API log: could not capture the call");
          }
        }
        done();
      });
    }

    // Runs after the server has stopped taking requests and the in-flight ones have answered, and (onClose hooks
    // run last added first) after the purge below has stopped: both write through `writeDb`.
    app.addHook("onClose", async () => {
      await writer.close();
      if (writeDb !== opts.db) await writeDb.destroy();
    });
    schedulePeriodic(
      app,
      "API log purge",
      PURGE_INTERVAL_MS,
      () => purgeExpired(writeDb, opts.retentionDays),
      opts.outage,
    );
  },
  { name: "api-log" },
);
