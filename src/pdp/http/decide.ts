// What every decision route does, whatever its protocol (Permit's, OPA's, AuthZEN's): authenticate, wait for a
// named revision, decide, log. The HTTP routes (server.ts, authzen.ts) call these.

import type { IncomingHttpHeaders } from "node:http";
import { tracing } from "../../lib/tracing.ts";
import type { TracingSdk } from "../../lib/tracing-sdk.ts";
import type { FastifyServerOptions } from "fastify";
import { AppError } from "../../lib/errors.ts";
import type { DatabaseOutage } from "../../db/outage.ts";
import type { CheckQuery, Decision } from "../engine/types.ts";
import type { BulkCheckRecord, DecisionLogger } from "../runtime/decision-log.ts";
import type { DecisionQuery } from "../storage.ts";
import type { DecisionSpoolStats } from "../runtime/decision-spool.ts";
import type { Replica } from "../runtime/replica.ts";

/** What the decision routes read of a request: Fastify's, or the plain one of the hot routes (fast-path.ts). */
export interface PdpRequest {
  headers: IncomingHttpHeaders;
  body?: unknown;
}

/** The environment a PDP request is answered from, after its key was checked. */
export interface PdpTarget {
  organizationId: string;
  projectId: string;
  environmentId: string;
  replica: Replica;
}

export interface FactsProxyRequest {
  method: string;
  /** path and query after /v2/facts/{proj}/{env} */
  rest: string;
  authorization: string;
  body: unknown;
}

export interface FactsProxyResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface PdpDeps {
  pdpId: string;
  publicUrl: string;
  /** Checks the key and returns the environment it selects; throws 401/403 AppErrors. */
  resolve(authorization: string | undefined, request: PdpRequest): PdpTarget | Promise<PdpTarget>;
  decisions: DecisionLogger;
  /** Forwards a facts request to the control plane (embedded: in process; standalone: over HTTP). */
  forwardFacts?: (target: PdpTarget, request: FactsProxyRequest) => Promise<FactsProxyResponse>;
  /** How the PDP reports readiness and lag on /ready and /metrics. */
  status(): {
    ready: boolean;
    /** `behind` is null when the PDP cannot know it (its control plane is unreachable). */
    environments: { environmentId: string; revision: number; lagMs: number; behind?: number | null }[];
    /** A standalone PDP's link to its control plane; `lastSyncAgeMs` is null before the first answer. */
    controlPlane?: { reachable: boolean; lastSyncAgeMs: number | null };
    /** A standalone PDP's decision log kept on disk while its control plane is away. */
    decisionLogSpool?: DecisionSpoolStats;
  };
  logger?: FastifyServerOptions["logger"];
  bodyLimitBytes?: number;
  /** The embedded PDP's database: its outages are logged once (requests that need it get 503). */
  outage?: DatabaseOutage;
}

export const MIN_REVISION_HEADER = "x-gatehouse-min-revision";
const DEFAULT_CONSISTENCY_WAIT_MS = 5000;
const MAX_CONSISTENCY_WAIT_MS = 30000;

const elapsedUs = (start: bigint) => Number((process.hrtime.bigint() - start) / 1000n);

function minRevisionOf(request: PdpRequest): number | undefined {
  const header = request.headers[MIN_REVISION_HEADER];
  const body = request.body as Record<string, unknown> | undefined;
  const fromBody = body && !Array.isArray(body) ? body["min_revision"] : undefined;
  const raw = typeof header === "string" ? header : fromBody;
  if (raw === undefined || raw === null || raw === "") return undefined;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new AppError("INVALID_INPUT", "min_revision must be a non-negative integer", undefined, [
      { loc: ["body", "min_revision"], msg: "must be a non-negative integer", type: "int_parsing" },
    ]);
  }
  return n;
}

function waitBoundMs(request: PdpRequest): number {
  const raw = request.headers["x-gatehouse-wait-timeout-ms"];
  const n = typeof raw === "string" ? Number(raw) : DEFAULT_CONSISTENCY_WAIT_MS;
  return Number.isFinite(n) && n >= 0 ? Math.min(n, MAX_CONSISTENCY_WAIT_MS) : DEFAULT_CONSISTENCY_WAIT_MS;
}

/**
 * Every decision route: authenticate, wait for a named revision (bounded), decide, log. A check that names a
 * revision the PDP cannot reach in time gets 504 rather than an answer from older data. A key already resolved
 * and no revision to wait for give the target at once, not a promise: the hot path takes no async hop (and, with
 * an AsyncLocalStorage in the process, no promise hook).
 */
export function prepare(
  deps: PdpDeps,
  request: PdpRequest,
  authorization?: string,
): PdpTarget | Promise<PdpTarget> {
  const resolved = deps.resolve(authorization ?? request.headers.authorization, request);
  return resolved instanceof Promise
    ? resolved.then((target) => atMinRevision(target, request))
    : atMinRevision(resolved, request);
}

/** `answer(target)`, at once when the target is known, else once it is. */
export const whenKnown = <T>(
  target: PdpTarget | Promise<PdpTarget>,
  answer: (t: PdpTarget) => T,
): T | Promise<T> => (target instanceof Promise ? target.then(answer) : answer(target));

function atMinRevision(target: PdpTarget, request: PdpRequest): PdpTarget | Promise<PdpTarget> {
  const minRevision = minRevisionOf(request);
  if (minRevision === undefined || target.replica.revision >= minRevision) return target;
  return target.replica.waitFor(minRevision, waitBoundMs(request)).then((reached) => {
    if (!reached) {
      throw new AppError(
        "TIMEOUT",
        `the PDP holds revision ${target.replica.revision}; ${minRevision} did not arrive in time`,
        {
          held_revision: target.replica.revision,
          min_revision: minRevision,
        },
      );
    }
    return target;
  });
}

/**
 * Whether a check names only what the entry's columns hold (user key, action, resource type, key and tenant): then
 * its input is not stored again, and the audit log API rebuilds it from the columns.
 */
function plainCheck(c: CheckQuery): boolean {
  const u = c.user;
  if (u.attributes !== undefined || u.email !== undefined || u.first_name !== undefined) return false;
  if (u.last_name !== undefined || c.resource.attributes !== undefined) return false;
  for (const _ in c.context) return false;
  return true;
}

/** A check's fields as the decision log records them (`bulkCheckText` writes the same as text). */
const checkRecord = (check: CheckQuery, d: Decision, latencyUs: number): BulkCheckRecord => ({
  user_key: check.user.key,
  action: check.action,
  resource_type: check.resource.type,
  resource_key: check.resource.key,
  tenant: check.resource.tenant,
  decision: d.allow,
  reason: d.reason,
  input: plainCheck(check) ? undefined : check,
  latency_us: latencyUs,
});

export function logCheck(
  deps: PdpDeps,
  target: PdpTarget,
  query: DecisionQuery,
  check: CheckQuery,
  d: Decision,
  latencyUs: number,
) {
  deps.decisions.record(target, {
    query,
    revision: target.replica.revision,
    ...checkRecord(check, d, latencyUs),
  });
}

export function logQuery(
  deps: PdpDeps,
  target: PdpTarget,
  query: DecisionQuery,
  input: unknown,
  result: unknown,
  start: bigint,
  user?: string,
) {
  if (!deps.decisions.active) return;
  deps.decisions.record(target, {
    query,
    user_key: user,
    input,
    result,
    revision: target.replica.revision,
    latency_us: elapsedUs(start),
  });
}

const json = JSON.stringify;

/**
 * A bulk check's entry in the decision log: the text JSON.stringify writes of its `checkRecord`, built by hand
 * around the reason's JSON (`reason`, made once for the entry and the answer).
 */
export function bulkCheckText(check: CheckQuery, d: Decision, latencyUs: number, reason: string): string {
  const r = check.resource;
  let text = `{"user_key":${json(check.user.key)},"action":${json(check.action)},"resource_type":${json(r.type)}`;
  if (r.key !== undefined) text += `,"resource_key":${json(r.key)}`;
  if (r.tenant !== undefined) text += `,"tenant":${json(r.tenant)}`;
  text += `,"decision":${d.allow},"reason":${reason}`;
  if (!plainCheck(check)) text += `,"input":${json(check)}`;
  return `${text},"latency_us":${latencyUs}}`;
}

/**
 * A bulk request's checks, decided in order and logged as one entry of the decision log (`recordBulk`): each
 * check still reads back as a decision of its own. `reasons`, when given, receives each decision's reason as
 * JSON text (made once, for the log and the answer).
 */
export function decideAll(
  deps: PdpDeps,
  target: PdpTarget,
  checks: CheckQuery[],
  reasons?: string[],
): Decision[] {
  const engine = target.replica.engine;
  if (!deps.decisions.active) {
    const decisions = checks.map((c) => engine.check(c));
    if (reasons) for (const d of decisions) reasons.push(json(d.reason));
    return decisions;
  }
  const texts: string[] = [];
  const decisions = checks.map((c) => {
    const start = process.hrtime.bigint();
    const d = engine.check(c);
    const reason = json(d.reason);
    reasons?.push(reason);
    texts.push(bulkCheckText(c, d, elapsedUs(start), reason));
    return d;
  });
  deps.decisions.recordBulk(target, { query: "bulk_check", revision: target.replica.revision }, texts);
  return decisions;
}

export function decide(
  deps: PdpDeps,
  target: PdpTarget,
  check: CheckQuery,
  query: DecisionQuery = "check",
): Decision {
  return tracing
    ? tracedDecision(tracing, deps, target, check, query)
    : decideOnce(deps, target, check, query);
}

/** A decision in a span of its own: what was asked (the action and resource type) and the answer, not who asked. */
function tracedDecision(
  sdk: TracingSdk,
  deps: PdpDeps,
  target: PdpTarget,
  check: CheckQuery,
  query: DecisionQuery,
): Decision {
  const span = sdk.startDecision({
    "gatehouse.pdp.query": query,
    "gatehouse.environment.id": target.environmentId,
    "gatehouse.pdp.action": check.action,
    "gatehouse.pdp.resource_type": check.resource.type,
  });
  let d: Decision | undefined;
  try {
    d = decideOnce(deps, target, check, query);
    return d;
  } finally {
    sdk.end(span, { "gatehouse.pdp.decision": d === undefined ? "error" : d.allow ? "allow" : "deny" }, !d);
  }
}

function decideOnce(deps: PdpDeps, target: PdpTarget, check: CheckQuery, query: DecisionQuery): Decision {
  // With the log off, neither the entry nor the clock readings it would take.
  if (!deps.decisions.active) return target.replica.engine.check(check);
  const start = process.hrtime.bigint();
  const d = target.replica.engine.check(check);
  logCheck(deps, target, query, check, d, elapsedUs(start));
  return d;
}
