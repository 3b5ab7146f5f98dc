import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from "fastify";
import { tracingPlugin } from "../../http/tracing.ts";
import { AppError } from "../../lib/errors.ts";
import { JsonText } from "../../lib/json.ts";
import { clientErrorHandler, errorsPlugin } from "../../http/errors.ts";
import { jsonBodyPlugin } from "../../http/json-body.ts";
import type { Decision } from "../engine/types.ts";
import type { AuthorizationResult } from "../decision-port.ts";
import { toCheck, toCheckList, toContext, toResource, toStringList, toUser } from "./input.ts";
import { authzenRoutes } from "./authzen.ts";
import { decide, decideAll, logQuery, prepare, type PdpDeps, type PdpTarget } from "./decide.ts";
import { answerDecision, decisionServerFactory, type DecisionAnswer } from "./fast-path.ts";
import { registerFactsProxy } from "./facts-proxy.ts";
import { registerHealthRoutes } from "./health.ts";
import { registerListingRoutes } from "./listing-routes.ts";

/** Permit's AuthorizationResult: `result` repeats `allow` for old SDKs; `debug` carries our reason. */
const authorizationResult = (d: Decision, revision: number): AuthorizationResult => ({
  allow: d.allow,
  result: d.allow,
  debug: { reason: d.reason, revision },
});

/** Fastify's options for both PDP ports. */
function serverOptions(deps: PdpDeps): FastifyServerOptions {
  return {
    logger: deps.logger ?? false,
    // Per-request log lines would cost more than the decision itself; the decision log records every check.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: bodyLimitOf(deps),
    clientErrorHandler: clientErrorHandler(deps.publicUrl),
  };
}

const bodyLimitOf = (deps: PdpDeps) => deps.bodyLimitBytes ?? 8 * 1024 * 1024;

/** The PDP's own port (7766): Permit's PDP routes, AuthZEN, health and the facts proxy. */
export async function buildPdpApp(deps: PdpDeps): Promise<FastifyInstance> {
  const app = await pdpServer(deps, permitDecisionRoutes(deps));
  registerHealthRoutes(app, deps);
  registerPermitRoutes(app, deps);
  registerListingRoutes(app, deps);
  await app.register(authzenRoutes, { deps });
  if (deps.forwardFacts) registerFactsProxy(app, deps, deps.forwardFacts);
  return app;
}

/**
 * A Fastify instance with what both PDP ports share: the options, the body parser, the error shape, and the port's
 * decision routes (POST, by path), which plain requests reach straight from node:http (fast-path.ts).
 */
async function pdpServer(
  deps: PdpDeps,
  decisionRoutes: ReadonlyMap<string, DecisionAnswer>,
): Promise<FastifyInstance> {
  const limit = bodyLimitOf(deps);
  const app: FastifyInstance = Fastify({
    ...serverOptions(deps),
    serverFactory: decisionServerFactory(deps, decisionRoutes, limit, () => app.log),
  });
  await app.register(tracingPlugin);
  await app.register(jsonBodyPlugin, { bodyLimitBytes: limit });
  await app.register(errorsPlugin, { publicUrl: deps.publicUrl, outage: deps.outage });
  // Synchronous handlers: with the key's target cached, a check is answered without a promise or a microtask.
  for (const [path, route] of decisionRoutes) {
    app.post(path, (request) => answerDecision(deps, route, request));
  }
  return app;
}

/** `/allowed`: one check, decided and logged; the control plane's check route answers with it too. */
export function checkOne(deps: PdpDeps, target: PdpTarget, body: unknown) {
  return authorizationResult(decide(deps, target, toCheck(body)), target.replica.revision);
}

/** `/allowed/bulk`: each check decided, in order, and the request logged as one entry holding them. */
export function checkBulk(deps: PdpDeps, target: PdpTarget, body: unknown) {
  const revision = target.replica.revision;
  return {
    allow: decideAll(deps, target, toCheckList(body)).map((d) => authorizationResult(d, revision)),
  };
}

/**
 * `/allowed/bulk` on a PDP port: `checkBulk`'s answer as the text JSON.stringify would write, built by hand:
 * each reason goes through JSON.stringify once (for the answer and the log), and no result objects are made
 * (docs/perf/pdp-http.md).
 */
function checkBulkText(deps: PdpDeps, target: PdpTarget, body: unknown): JsonText {
  const tail = `,"revision":${target.replica.revision}}}`;
  const reasons: string[] = [];
  const parts = decideAll(deps, target, toCheckList(body), reasons).map((d, i) => {
    const allow = d.allow ? "true" : "false";
    return `{"allow":${allow},"result":${allow},"debug":{"reason":${reasons[i]}${tail}`;
  });
  return new JsonText(`{"allow":[${parts.join(",")}]}`);
}

function requiredString(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== "string" || value === "") {
    throw new AppError("INVALID_INPUT", `${name} must be a non-empty string`, undefined, [
      { loc: ["body", name], msg: "must be a non-empty string", type: "string_type" },
    ]);
  }
  return value;
}

/**
 * `/allowed_url` (Permit's URL-based check): the proxy configs' mapping rule that the method and URL match names
 * the resource type and action; the URL's placeholders become the resource's attributes. No rule: a deny.
 */
function allowedUrl(deps: PdpDeps, target: PdpTarget, rawBody: unknown) {
  const body = (rawBody ?? {}) as Record<string, unknown>;
  const user = toUser(body["user"]);
  const method = requiredString(body, "http_method");
  const url = requiredString(body, "url");
  const tenant = requiredString(body, "tenant");
  if (url.length > 8192 || !/^https?:\/\/[^/?#\s]+/i.test(url)) {
    throw new AppError("INVALID_INPUT", "url must be an absolute http(s) URL", undefined, [
      { loc: ["body", "url"], msg: "must be an absolute http(s) URL", type: "url_parsing" },
    ]);
  }
  const context = toContext(body["context"]);
  const match = target.replica.engine.mapUrl(method, url);
  if (!match) {
    const d: Decision = {
      allow: false,
      reason: {
        kind: "deny",
        code: "NO_MAPPING_RULE",
        message: `no mapping rule matches ${method.toUpperCase()} ${url}`,
      },
    };
    return authorizationResult(d, target.replica.revision);
  }
  const check = {
    user,
    action: match.rule.action,
    resource: { type: match.rule.resource, tenant, attributes: match.attributes },
    context,
  };
  return {
    ...authorizationResult(decide(deps, target, check), target.replica.revision),
    query: { user, action: check.action, resource: check.resource, context },
  };
}

/** `/user-permissions`: what the user may do, by tenant and instance; the query is logged. */
export function userPermissionsOf(deps: PdpDeps, target: PdpTarget, rawBody: unknown) {
  const body = (rawBody ?? {}) as Record<string, unknown>;
  const query = {
    user: toUser(body["user"]),
    ...(toStringList(body["tenants"], ["body", "tenants"]) && {
      tenants: toStringList(body["tenants"], ["body", "tenants"]),
    }),
    ...(toStringList(body["resources"], ["body", "resources"]) && {
      resources: toStringList(body["resources"], ["body", "resources"]),
    }),
    ...(toStringList(body["resource_types"], ["body", "resource_types"]) && {
      resource_types: toStringList(body["resource_types"], ["body", "resource_types"]),
    }),
    context: toContext(body["context"]),
  };
  const start = process.hrtime.bigint();
  const permissions = target.replica.engine.userPermissions(query);
  logQuery(
    deps,
    target,
    "get_user_permissions",
    query,
    { keys: Object.keys(permissions) },
    start,
    query.user.key,
  );
  return permissions;
}

/**
 * `/plan/resources` (Gatehouse's own, docs/data-filtering.md): which instances of a type the user may act on, as
 * always_allowed, always_denied or a condition on the resource's fields, at the revision answered.
 */
export function planResourcesOf(target: PdpTarget, rawBody: unknown) {
  const body = (rawBody ?? {}) as Record<string, unknown>;
  const resource = toResource(body["resource"]);
  if (resource.key !== undefined && resource.key !== "") {
    throw new AppError(
      "INVALID_INPUT",
      "a plan is about a resource type: resource.key must be absent",
      undefined,
      [{ loc: ["body", "resource", "key"], msg: "must be absent", type: "extra_forbidden" }],
    );
  }
  const plan = target.replica.engine.planResources({
    user: toUser(body["user"]),
    action: requiredString(body, "action"),
    resource: { type: resource.type, ...(resource.tenant ? { tenant: resource.tenant } : {}) },
    context: toContext(body["context"]),
  });
  return { ...plan, revision: target.replica.revision };
}

/** `/allowed` and `/allowed/bulk`, the checks a plain request may reach without Fastify. */
const permitDecisionRoutes = (deps: PdpDeps) =>
  new Map<string, DecisionAnswer>([
    ["/allowed", (target, body) => checkOne(deps, target, body)],
    ["/allowed/bulk", (target, body) => checkBulkText(deps, target, body)],
  ]);

/** Permit's PDP routes (contract §4) besides the checks: the permission queries. */
function registerPermitRoutes(app: FastifyInstance, deps: PdpDeps): void {
  // Permit's Node SDK 2.7.6 sends its axios config as the body here, with the key inside it (contract §4.5).
  app.post("/allowed/all-tenants", async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const sdkBug = typeof body["params"] === "object" && body["params"] !== null;
    const embeddedHeaders = (body["headers"] ?? {}) as Record<string, unknown>;
    const auth =
      request.headers.authorization ??
      (sdkBug ? String(embeddedHeaders["Authorization"] ?? "") || undefined : undefined);
    const target = await prepare(deps, request, auth);
    const check = toCheck(sdkBug ? body["params"] : body, sdkBug ? ["body", "params"] : ["body"]);
    const start = process.hrtime.bigint();
    const tenants = target.replica.engine.allTenants(check);
    const allowed = tenants.map((t) => ({
      allow: true,
      result: true,
      tenant: t.tenant,
      debug: { reason: t.reason },
    }));
    logQuery(
      deps,
      target,
      "all_tenants",
      check,
      { tenants: tenants.map((t) => t.tenant.key) },
      start,
      check.user.key,
    );
    return { allowed_tenants: allowed, allowedTenants: allowed };
  });

  app.post("/allowed_url", async (request) => {
    const target = await prepare(deps, request);
    return allowedUrl(deps, target, request.body);
  });

  app.post("/plan/resources", async (request) => planResourcesOf(await prepare(deps, request), request.body));

  app.post("/user-permissions", async (request) =>
    userPermissionsOf(deps, await prepare(deps, request), request.body),
  );

  app.post("/authorized_users", async (request) => {
    const target = await prepare(deps, request);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (typeof body["action"] !== "string" || body["action"] === "") {
      throw new AppError("INVALID_INPUT", "action must be a non-empty string", undefined, [
        { loc: ["body", "action"], msg: "required", type: "missing" },
      ]);
    }
    const query = {
      action: body["action"],
      resource: toResource(body["resource"]),
      context: toContext(body["context"]),
    };
    const start = process.hrtime.bigint();
    const result = target.replica.engine.authorizedUsers(query);
    logQuery(deps, target, "get_authorized_users", query, { users: Object.keys(result.users).length }, start);
    return result;
  });

  // Permit's local API: the PDP's own copy of the role assignments, filtered and paged.
  app.get("/local/role_assignments", async (request) => {
    const target = await prepare(deps, request);
    const query = (request.query ?? {}) as Record<string, unknown>;
    const filter: Record<string, string> = {};
    for (const name of ["user", "role", "tenant", "resource", "resource_instance"]) {
      const value = query[name];
      if (value === undefined) continue;
      if (typeof value !== "string") {
        throw new AppError("INVALID_INPUT", `${name} must be given once`, undefined, [
          { loc: ["query", name], msg: "must be a string", type: "string_type" },
        ]);
      }
      filter[name] = value;
    }
    const page = queryInteger(query, "page", 1, 1, Number.MAX_SAFE_INTEGER);
    const perPage = queryInteger(query, "per_page", 30, 1, 100);
    return target.replica.engine.roleAssignments(filter, (page - 1) * perPage, perPage);
  });

  app.post("/user-tenants", async (request) => {
    const target = await prepare(deps, request);
    const body = (request.body ?? {}) as Record<string, unknown>;
    const user = toUser(body["user"]);
    const start = process.hrtime.bigint();
    const tenants = target.replica.engine.userTenants(user.key);
    logQuery(deps, target, "user_tenants", { user }, { tenants: tenants.map((t) => t.key) }, start, user.key);
    return tenants;
  });
}

function queryInteger(
  query: Record<string, unknown>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const n = typeof raw === "string" && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) {
    throw new AppError("INVALID_INPUT", `${name} must be an integer from ${min} to ${max}`, undefined, [
      { loc: ["query", name], msg: `must be an integer from ${min} to ${max}`, type: "int_parsing" },
    ]);
  }
  return n;
}

/** The OPA-compatible port (8181): what the SDK's `check(..., {useOpa: true})` calls. */
export async function buildOpaApp(deps: PdpDeps): Promise<FastifyInstance> {
  const app = await pdpServer(deps, opaDecisionRoutes(deps));
  app.get("/health", async () => ({}));
  return app;
}

const opaDecisionRoutes = (deps: PdpDeps) =>
  new Map<string, DecisionAnswer>([
    [
      "/v1/data/permit/root",
      (target, body) => {
        const input = ((body ?? {}) as Record<string, unknown>)["input"];
        const d = decide(deps, target, toCheck(input, ["body", "input"]));
        return { result: { allow: d.allow, debug: { reason: d.reason } } };
      },
    ],
    [
      "/v1/data/permit/bulk",
      (target, body) => {
        const input = ((body ?? {}) as Record<string, unknown>)["input"] as
          Record<string, unknown> | undefined;
        const checks = toCheckList(input?.["checks"], ["body", "input", "checks"]);
        return {
          result: { allow: decideAll(deps, target, checks).map((d) => ({ allow: d.allow })) },
        };
      },
    ],
  ]);
