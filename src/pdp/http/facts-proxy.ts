import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, errorBody } from "../../lib/errors.ts";
import type { FactsProxyRequest, FactsProxyResponse, PdpDeps, PdpTarget } from "./decide.ts";

// The PDP's facts proxy: facts writes sent to the PDP go to the control plane (embedded: in process; standalone:
// over HTTP) and, as Permit's PDP does, the answer waits until the PDP holds the write.

/** Facts writes through the PDP wait for the PDP to hold them, as Permit's PDP does (X-Wait-Timeout). */
const DEFAULT_FACTS_WAIT_S = 10;
const MAX_FACTS_WAIT_S = 60;

/** Facts writes whose effect the PDP waits for before answering (Permit's list, contract §4.7). */
function isWaitingWrite(method: string, rest: string): boolean {
  const path = rest.split("?")[0] ?? "";
  if (
    method === "POST" &&
    /^\/(users|tenants|resource_instances|relationship_tuples|role_assignments)$/.test(path)
  )
    return true;
  if (method === "DELETE" && path === "/role_assignments") return true;
  if ((method === "PUT" || method === "PATCH") && /^\/users\/[^/]+$/.test(path)) return true;
  if ((method === "POST" || method === "DELETE") && /^\/users\/[^/]+\/roles$/.test(path)) return true;
  if (method === "PATCH" && /^\/resource_instances\/[^/]+$/.test(path)) return true;
  return false;
}

function factsWaitSeconds(request: FastifyRequest): number | "forever" {
  const raw = request.headers["x-wait-timeout"];
  if (raw === undefined) return DEFAULT_FACTS_WAIT_S;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === "") return "forever";
  const n = Number(value);
  if (!Number.isFinite(n)) {
    throw new AppError("INVALID_INPUT", "X-Wait-Timeout must be a number of seconds", undefined, [
      { loc: ["header", "x-wait-timeout"], msg: "must be a number", type: "float_parsing" },
    ]);
  }
  return n < 0 ? "forever" : n;
}

export function registerFactsProxy(
  app: FastifyInstance,
  deps: PdpDeps,
  forward: (target: PdpTarget, request: FactsProxyRequest) => Promise<FactsProxyResponse>,
) {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const rest = factsRest(request.url);
    const target = await deps.resolve(request.headers.authorization, request);
    const wait = factsWaitSeconds(request);
    const policy = request.headers["x-timeout-policy"] === "fail" ? "fail" : "ignore";
    const upstream = await forward(target, {
      method: request.method,
      rest,
      authorization: request.headers.authorization ?? "",
      body: request.body,
    });
    const revision = Number(upstream.headers["x-gatehouse-revision"]);
    if (
      upstream.status < 300 &&
      Number.isSafeInteger(revision) &&
      isWaitingWrite(request.method, rest) &&
      wait !== 0
    ) {
      const boundMs = wait === "forever" ? MAX_FACTS_WAIT_S * 1000 : Math.min(wait, MAX_FACTS_WAIT_S) * 1000;
      const reached = await target.replica.waitFor(revision, boundMs);
      if (!reached && policy === "fail") {
        const error = new AppError(
          "TIMEOUT",
          "the PDP did not receive the change in time (X-Timeout-Policy: fail)",
        );
        return reply.code(424).send({ ...errorBody(error, deps.publicUrl), error_code: "FAILED_DEPENDENCY" });
      }
    }
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (
        name === "content-type" ||
        name === "retry-after" ||
        name.startsWith("x-gatehouse") ||
        name.startsWith("ratelimit")
      )
        void reply.header(name, value);
    }
    return reply.code(upstream.status).send(upstream.body === "" ? undefined : upstream.body);
  };
  // Permit's PDP mounts its facts routes at both prefixes; `/facts/...` names no environment (the key does).
  for (const prefix of ["/v2/facts/:proj_id/:env_id/*", "/facts/*"]) {
    app.route({ method: ["GET", "POST", "PUT", "PATCH", "DELETE"], url: prefix, handler });
  }
}

/** A segment the forwarded URL's parser would read as `.`/`..` or as a separator (WHATWG reads `\` as `/`). */
const UNSAFE_SEGMENT = /^\.{1,2}$|\\|%2f|%5c|%2e/i;

/**
 * The path (and query) after `/v2/facts/{proj}/{env}` or `/facts`, which the PDP appends to its own environment's
 * facts path. A segment that could climb out of it (`..`, `%2e%2e`, an encoded separator) is refused: the control
 * plane's URL parser would otherwise resolve it into another route.
 */
function factsRest(url: string): string {
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  const segments = path.split("/");
  for (const segment of segments) {
    if (UNSAFE_SEGMENT.test(segment)) {
      throw new AppError(
        "BAD_REQUEST",
        "a facts path may not have '.' or '..' segments nor encode '/', '\\' or '.'",
        undefined,
        [{ loc: ["path"], msg: "unsafe path segment", type: "value_error" }],
      );
    }
  }
  const skip = segments[1] === "v2" ? 5 : 2;
  return "/" + segments.slice(skip).join("/") + (query === -1 ? "" : url.slice(query));
}
