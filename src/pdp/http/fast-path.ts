import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { tracing } from "../../lib/tracing.ts";
import type { FastifyBaseLogger, FastifyServerOptions } from "fastify";
import { errorAnswer } from "../../http/errors.ts";
import { JSON_CONTENT_TYPE, parseJsonBody } from "../../http/json-body.ts";
import { JsonText } from "../../lib/json.ts";
import { prepare, whenKnown, type PdpDeps, type PdpRequest, type PdpTarget } from "./decide.ts";

/** A decision route's work once its key is known: the answer's JSON value. */
export type DecisionAnswer = (target: PdpTarget, body: unknown) => unknown;

/** A decision route's answer to a request, whichever server read it: at once when the key's target is known. */
export const answerDecision = (deps: PdpDeps, route: DecisionAnswer, request: PdpRequest) =>
  whenKnown(prepare(deps, request), (target) => route(target, request.body));

/**
 * Fastify's `serverFactory` for a PDP port. The decision routes in `routes` (by exact path, POST) are answered
 * straight on node:http when the request is plain: a JSON body with a Content-Length within the limit. Fastify's
 * request and reply objects, hooks and content-type parsing cost more per check than the engine
 * (docs/perf/pdp-http.md). The same body parser, key resolution, answer and error bodies serve both ways; every other
 * request (another route, a chunked or oversized body, another media type) goes to Fastify, which answers as
 * before.
 */
export function decisionServerFactory(
  deps: PdpDeps,
  routes: ReadonlyMap<string, DecisionAnswer>,
  bodyLimitBytes: number,
  log: () => FastifyBaseLogger,
) {
  const fail = (res: ServerResponse, error: unknown) => {
    const answer = errorAnswer(error, { publicUrl: deps.publicUrl, outage: deps.outage }, log());
    send(res, answer.status, answer.body, answer.headers);
  };
  const answer = (req: IncomingMessage, res: ServerResponse, route: DecisionAnswer, raw: Buffer) => {
    try {
      const request: PdpRequest = { headers: req.headers, body: parseJsonBody(raw) };
      const result = answerDecision(deps, route, request);
      if (result instanceof Promise)
        result.then(
          (value) => send(res, 200, value),
          (error) => fail(res, error),
        );
      else send(res, 200, result);
    } catch (error) {
      fail(res, error);
    }
  };
  return (fastify: http.RequestListener, options: FastifyServerOptions) => {
    const server = http.createServer((req, res) => {
      const route = req.method === "POST" ? routes.get(req.url ?? "") : undefined;
      const length = Number(req.headers["content-length"]);
      // While tracing, every request goes through Fastify, whose hooks make its span.
      if (
        route === undefined ||
        tracing !== undefined ||
        !(length <= bodyLimitBytes) ||
        req.headers["transfer-encoding"] !== undefined ||
        !isJson(req.headers["content-type"])
      ) {
        fastify(req, res);
        return;
      }
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => answer(req, res, route, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
      req.on("error", () => {}); // the client went away: there is no one to answer
    });
    // What Fastify sets on the servers it makes itself.
    server.keepAliveTimeout = options.keepAliveTimeout ?? 72_000;
    server.requestTimeout = options.requestTimeout ?? 0;
    server.setTimeout(options.connectionTimeout ?? 0);
    return server;
  };
}

/** The media type Fastify's JSON parser takes, with or without parameters; anything else is Fastify's to judge. */
const isJson = (type: string | undefined) =>
  type !== undefined && (type === "application/json" || type.startsWith("application/json;"));

function send(res: ServerResponse, status: number, value: unknown, headers?: Record<string, string>): void {
  if (res.destroyed) return;
  const body = value instanceof JsonText ? value.text : JSON.stringify(value);
  res.writeHead(status, {
    ...headers,
    "content-type": JSON_CONTENT_TYPE,
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}
