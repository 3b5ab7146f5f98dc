import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import fp from "fastify-plugin";
import type {
  ConnectionError,
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
} from "fastify";
import FindMyWay, { type HTTPMethod } from "find-my-way";
import { AppError, errorBody, type ErrorBody, type ErrorCode, type ValidationDetail } from "../lib/errors.ts";
import { isDatabaseUnavailable, isTransactionConflict, isUniqueViolation } from "../db/errors.ts";
import { RETRY_AFTER_SECONDS, type DatabaseOutage } from "../db/outage.ts";

const METHODS: HTTPMethod[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

interface AjvIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

function validationDetail(error: FastifyError): ValidationDetail[] {
  const where = error.validationContext ?? "body";
  return ((error.validation ?? []) as AjvIssue[]).map((issue) => {
    const loc: (string | number)[] = [
      where === "querystring" ? "query" : where === "params" ? "path" : where,
    ];
    for (const part of (issue.instancePath ?? "").split("/").slice(1)) {
      loc.push(/^\d+$/.test(part) ? Number(part) : part.replace(/~1/g, "/").replace(/~0/g, "~"));
    }
    const missing = issue.params?.["missingProperty"];
    if (typeof missing === "string") loc.push(missing);
    return { loc, msg: issue.message ?? "is invalid", type: issue.keyword ?? "value_error" };
  });
}

/** Maps whatever was thrown to the one error model; nothing internal (stack, SQL) reaches the client. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // A race that a service's own check could not see: two writers creating the same key at once.
  if (isUniqueViolation(error))
    return new AppError("DUPLICATE_ENTITY", "an object with this key already exists");
  const e = error as FastifyError & { code?: string };
  if (e.validation) {
    const detail = validationDetail(e);
    const first = detail[0];
    const message = first ? `${first.loc.join(".")}: ${first.msg}` : "the request is invalid";
    return new AppError("INVALID_INPUT", message, undefined, detail);
  }
  const byCode: Record<string, [ErrorCode, string]> = {
    FST_ERR_CTP_INVALID_JSON_BODY: ["INVALID_INPUT", "the body is not valid JSON"],
    FST_ERR_CTP_EMPTY_JSON_BODY: ["INVALID_INPUT", "the body is empty"],
    FST_ERR_CTP_BODY_TOO_LARGE: ["PAYLOAD_TOO_LARGE", "the request body is larger than the server accepts"],
    FST_ERR_CTP_INVALID_MEDIA_TYPE: ["UNSUPPORTED_MEDIA_TYPE", "send the body as application/json"],
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: [
      "INVALID_INPUT",
      "the Content-Length header does not match the body",
    ],
    FST_ERR_BAD_URL: ["INVALID_INPUT", "the URL is malformed"],
  };
  const known = e.code ? byCode[e.code] : undefined;
  if (known) {
    const detail =
      known[0] === "INVALID_INPUT" ? [{ loc: ["body"], msg: known[1], type: "json_invalid" }] : undefined;
    return new AppError(known[0], known[1], undefined, detail);
  }
  if (e.statusCode === 413)
    return new AppError("PAYLOAD_TOO_LARGE", "the request body is larger than the server accepts");
  if (e.statusCode === 415)
    return new AppError("UNSUPPORTED_MEDIA_TYPE", "send the body as application/json");
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return new AppError("INVALID_INPUT", "the request is invalid", undefined, [
      { loc: ["request"], msg: "the request is invalid", type: "value_error" },
    ]);
  }
  if (isTransactionConflict(error)) {
    return new AppError(
      "SERVICE_UNAVAILABLE",
      `the write collided with a concurrent write and nothing of it was kept; retry in ${RETRY_AFTER_SECONDS} seconds`,
      { retry_after_seconds: RETRY_AFTER_SECONDS },
    );
  }
  // The database being away is the service's state, not the request's fault nor a bug: retry later.
  if (isDatabaseUnavailable(error)) {
    return new AppError(
      "SERVICE_UNAVAILABLE",
      `the database is unavailable; retry in ${RETRY_AFTER_SECONDS} seconds`,
      { retry_after_seconds: RETRY_AFTER_SECONDS },
    );
  }
  return new AppError(
    "UNEXPECTED_ERROR",
    "an unexpected error occurred; the request id is in the server log",
  );
}

interface ErrorOptions {
  publicUrl: string;
  outage?: DatabaseOutage | undefined;
  /** Answers an unknown route before the 404 (the dashboard's page for its client routes); true when it did. */
  fallback?: ((request: FastifyRequest, reply: FastifyReply) => boolean) | undefined;
}

/** What any thrown error answers: its status, headers and error body (a log line for what is not the client's). */
export function errorAnswer(
  error: unknown,
  opts: ErrorOptions,
  log: FastifyBaseLogger,
  adapt: (error: AppError) => AppError = (e) => e,
): { status: number; headers: Record<string, string>; body: ErrorBody } {
  const appError = adapt(toAppError(error));
  if (appError.code === "UNEXPECTED_ERROR") log.error({ err: error }, "unexpected error");
  const headers: Record<string, string> = {};
  if (appError.code === "SERVICE_UNAVAILABLE") {
    headers["retry-after"] = String(RETRY_AFTER_SECONDS);
    // One line per outage, not one per call.
    opts.outage?.report(error, log);
  }
  return { status: appError.status, headers, body: errorBody(appError, opts.publicUrl) };
}

/**
 * Fastify's `clientErrorHandler` for every port: what Node's HTTP parser refuses (malformed HTTP, headers too large,
 * a request that never finished arriving) is answered with the error body too, with no body to a HEAD request.
 */
export function clientErrorHandler(publicUrl: string) {
  return (error: ConnectionError, socket: Socket): void => {
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const appError =
      error.code === "HPE_HEADER_OVERFLOW"
        ? new AppError("HEADERS_TOO_LARGE", "the request's headers are larger than the server accepts")
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new AppError("REQUEST_TIMEOUT", "the request did not arrive in time")
          : new AppError("BAD_REQUEST", "the request is not valid HTTP");
    // The parser has not handed the method over yet; the packet it choked on starts with it.
    const packet: unknown = error.rawPacket; // a Buffer, whatever Fastify's type says
    const head = Buffer.isBuffer(packet) && packet.subarray(0, 5).toString("latin1") === "HEAD ";
    const body = JSON.stringify(errorBody(appError, publicUrl));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n` +
          `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
          `x-content-type-options: nosniff\r\nconnection: close\r\n\r\n${head ? "" : body}`,
      );
    }
    socket.destroy();
  };
}

/** Renders any error as the error body; `adapt` lets a protocol rename codes (AuthZEN's 400 for 422). */
export function errorHandler(opts: ErrorOptions, adapt: (error: AppError) => AppError = (e) => e) {
  return (error: unknown, request: FastifyRequest, reply: FastifyReply): void => {
    const answer = errorAnswer(error, opts, request.log, adapt);
    void reply.status(answer.status).headers(answer.headers).send(answer.body);
  };
}

/** One error handler for the whole app, plus 404 and 405 for unknown routes. */
export const errorsPlugin = fp(
  async (app: FastifyInstance, opts: ErrorOptions) => {
    // A shadow router of every route, so a known path with a wrong method can answer 405 rather than 404.
    const routes = FindMyWay();
    app.addHook("onRoute", (route) => {
      for (const method of [route.method].flat()) {
        if (METHODS.includes(method as HTTPMethod) && !routes.hasRoute(method as HTTPMethod, route.url)) {
          routes.on(method as HTTPMethod, route.url, () => {});
        }
      }
    });

    app.setErrorHandler(errorHandler(opts));

    app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
      if (opts.fallback?.(request, reply)) return;
      const path = request.url.split("?")[0] ?? "/";
      const allowed = METHODS.filter((m) => m !== request.method && routes.find(m, path) !== null);
      const error =
        allowed.length > 0
          ? new AppError(
              "METHOD_NOT_ALLOWED",
              `${request.method} is not allowed here; use ${allowed.join(", ")}`,
            )
          : new AppError("NOT_FOUND", `no route ${request.method} ${path}`);
      if (allowed.length > 0) void reply.header("allow", allowed.join(", "));
      void reply.status(error.status).send(errorBody(error, opts.publicUrl));
    });
  },
  { name: "errors" },
);
