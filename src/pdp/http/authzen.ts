// OpenID AuthZEN Authorization API 1.0 on the PDP's port: evaluation, evaluations (with its semantics
// options), the subject, resource and action searches, and the metadata document. Decisions come from the same
// engine as Permit's routes. Mapping (docs/pdp.md): a subject of type "user" is the user whose key is its id,
// its properties are request attributes; the action's name is the action; the resource's type is the resource
// type and its id the instance when one with that key exists, otherwise the check is on the type (tenant roles
// and attribute rules decide); resource properties are request attributes, `properties.tenant` (or
// `context.tenant`, else "default") the tenant.

import type { FastifyInstance } from "fastify";
import { AppError } from "../../lib/errors.ts";
import { errorHandler } from "../../http/errors.ts";
import { DEFAULT_TENANT, type ListAnswer, type ListRequest } from "../engine/index.ts";
import type { Attributes, CheckQuery, Decision, QueryResource, QueryUser } from "../engine/types.ts";
import { decodeCursor, encodeCursor, pageOrGone, requestDigest } from "./cursor.ts";
import { logCheck, prepare, type PdpDeps, type PdpTarget } from "./decide.ts";

const SUBJECT_TYPE = "user";
/** A search for subjects of another type than users finds none. */
const nothing = <T>(): ListAnswer<T> => ({ gone: false, items: [], revision: 0 });
const MAX_EVALUATIONS = 1000;
const MAX_PAGE = 1000;
const SEMANTICS = ["execute_all", "deny_on_first_deny", "permit_on_first_permit"] as const;
type Semantic = (typeof SEMANTICS)[number];

type Loc = (string | number)[];
type Json = Record<string, unknown>;

interface Entity {
  type: string;
  id?: string;
  properties?: Json;
}

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The specification answers a malformed request with 400 Bad Request; the body is the project's error body. */
const bad = (message: string, loc: Loc): AppError =>
  new AppError("BAD_REQUEST", message, undefined, [{ loc, msg: message, type: "value_error" }]);

function object(raw: unknown, loc: Loc, what: string): Json {
  if (!isObject(raw)) throw bad(`${what} must be an object`, loc);
  return raw;
}

function optionalObject(raw: unknown, loc: Loc, what: string): Json | undefined {
  return raw === undefined || raw === null ? undefined : object(raw, loc, what);
}

function requiredString(raw: unknown, loc: Loc, what: string): string {
  if (typeof raw !== "string" || raw === "")
    throw bad(`${what} is required and must be a non-empty string`, loc);
  return raw;
}

/** A subject or resource: `type` required, `id` required unless the search asks for it (then ignored). */
function entity(raw: unknown, loc: Loc, what: string, needsId: boolean): Entity {
  const value = object(raw, loc, what);
  const result: Entity = { type: requiredString(value["type"], [...loc, "type"], `${what}.type`) };
  if (needsId) result.id = requiredString(value["id"], [...loc, "id"], `${what}.id`);
  const properties = optionalObject(value["properties"], [...loc, "properties"], `${what}.properties`);
  if (properties !== undefined) result.properties = properties;
  return result;
}

function actionName(raw: unknown, loc: Loc): string {
  const value = object(raw, loc, "action");
  optionalObject(value["properties"], [...loc, "properties"], "action.properties");
  return requiredString(value["name"], [...loc, "name"], "action.name");
}

const contextOf = (raw: unknown, loc: Loc): Attributes => optionalObject(raw, loc, "context") ?? {};

function queryUser(subject: Entity): QueryUser {
  return { key: subject.id as string, ...(subject.properties && { attributes: subject.properties }) };
}

function queryResource(resource: Entity, context: Attributes): QueryResource {
  const { tenant, ...attributes } = resource.properties ?? {};
  const tenantKey =
    (typeof tenant === "string" && tenant) ||
    (typeof context["tenant"] === "string" && context["tenant"]) ||
    DEFAULT_TENANT;
  const result: QueryResource = { type: resource.type, tenant: tenantKey };
  // An id that names no stored instance is not an error: the engine decides it in this tenant (RBAC and ABAC).
  if (resource.id !== undefined) result.key = resource.id;
  if (Object.keys(attributes).length > 0) result.attributes = attributes;
  return result;
}

interface Evaluation {
  subject: Entity;
  action: string;
  resource: Entity;
  context: Attributes;
}

function evaluationOf(raw: unknown, loc: Loc, defaults: Json = {}): Evaluation {
  const value = object(raw, loc, "the evaluation");
  const pick = (name: string): [unknown, Loc] =>
    value[name] !== undefined ? [value[name], [...loc, name]] : [defaults[name], ["body", name]];
  const [subject, subjectLoc] = pick("subject");
  const [action, actionLoc] = pick("action");
  const [resource, resourceLoc] = pick("resource");
  const [context, contextLoc] = pick("context");
  return {
    subject: entity(subject, subjectLoc, "subject", true),
    action: actionName(action, actionLoc),
    resource: entity(resource, resourceLoc, "resource", true),
    context: contextOf(context, contextLoc),
  };
}

/** Decides one evaluation and records it in the decision log, with the id the PEP sent. */
function decide(deps: PdpDeps, target: PdpTarget, e: Evaluation, query: "check" | "bulk_check"): Decision {
  const start = process.hrtime.bigint();
  const engine = target.replica.engine;
  const resource = queryResource(e.resource, e.context);
  const check: CheckQuery = { user: queryUser(e.subject), action: e.action, resource, context: e.context };
  const decision: Decision =
    e.subject.type === SUBJECT_TYPE
      ? engine.check(check)
      : {
          allow: false,
          reason: {
            kind: "deny",
            code: "UNKNOWN_USER",
            message: `subject type '${e.subject.type}' is not '${SUBJECT_TYPE}': the subjects are users`,
          },
        };
  if (deps.decisions.active) {
    const logged = { ...check, resource: { ...resource, key: e.resource.id as string } };
    logCheck(deps, target, query, logged, decision, Number((process.hrtime.bigint() - start) / 1000n));
  }
  return decision;
}

function semanticOf(body: Json): Semantic {
  const options = optionalObject(body["options"], ["body", "options"], "options");
  const raw = options?.["evaluations_semantic"];
  if (raw === undefined) return "execute_all";
  if (typeof raw !== "string" || !(SEMANTICS as readonly string[]).includes(raw)) {
    throw bad(`options.evaluations_semantic must be one of ${SEMANTICS.join(", ")}`, [
      "body",
      "options",
      "evaluations_semantic",
    ]);
  }
  return raw as Semantic;
}

function evaluations(deps: PdpDeps, target: PdpTarget, body: Json) {
  const semantic = semanticOf(body);
  const items = body["evaluations"];
  if (items !== undefined && !Array.isArray(items))
    throw bad("evaluations must be an array", ["body", "evaluations"]);
  // Without evaluations the request is a single evaluation, answered as one (backwards compatible).
  if (items === undefined || items.length === 0) {
    return { decision: decide(deps, target, evaluationOf(body, ["body"]), "check").allow };
  }
  if (items.length > MAX_EVALUATIONS) {
    throw bad(`at most ${MAX_EVALUATIONS} evaluations per request`, ["body", "evaluations"]);
  }
  // The whole payload is checked before any decision: a malformed item fails the request, not just its slot.
  const parsed = items.map((item, i) => evaluationOf(item, ["body", "evaluations", i], body));
  const results: Json[] = [];
  for (const e of parsed) {
    const allow = decide(deps, target, e, "bulk_check").allow;
    if (!allow && semantic === "deny_on_first_deny") {
      results.push({ decision: false, context: { code: "200", reason: "deny_on_first_deny" } });
      break;
    }
    results.push({ decision: allow });
    if (allow && semantic === "permit_on_first_permit") break;
  }
  return { evaluations: results };
}

/** The request's `page` object: its limit (at most MAX_PAGE), its token, and the digest of the rest. */
function pageRequest(body: Json) {
  const page = optionalObject(body["page"], ["body", "page"], "page");
  const { page: _page, ...rest } = body;
  const digest = requestDigest(rest);
  let limit = MAX_PAGE;
  const rawLimit = page?.["limit"];
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== "number" || !Number.isSafeInteger(rawLimit) || rawLimit < 0) {
      throw bad("page.limit must be a non-negative integer", ["body", "page", "limit"]);
    }
    limit = Math.min(rawLimit, MAX_PAGE);
  }
  const token = page?.["token"];
  return { page, digest, limit, token: token === undefined || token === "" ? undefined : token };
}

/**
 * Pages of the action search's sorted result: the token is opaque to the PEP (the offset and a digest of the rest
 * of the request, which must stay the same from page to page). Without a `page` object a result of at most
 * MAX_PAGE entries comes whole, without `page`.
 */
function paged<T>(body: Json, all: T[]): Json {
  const { page, digest, limit, token } = pageRequest(body);
  let offset = 0;
  if (token !== undefined) {
    const decoded = typeof token === "string" ? Buffer.from(token, "base64url").toString("utf8") : "";
    const match = /^(\d{1,9})\.([A-Za-z0-9_-]{16})$/.exec(decoded);
    if (match === null) throw bad("page.token is not a token this PDP issued", ["body", "page", "token"]);
    if (match[2] !== digest) {
      throw bad("page.token belongs to another request: only the token may change between pages", [
        "body",
        "page",
        "token",
      ]);
    }
    offset = Number(match[1]);
  }
  const results = all.slice(offset, offset + limit);
  const next = offset + results.length;
  if (page === undefined && next >= all.length) return { results };
  const nextToken = next < all.length ? Buffer.from(`${next}.${digest}`).toString("base64url") : "";
  return { page: { next_token: nextToken, count: results.length, total: all.length }, results };
}

/**
 * Pages of a listing walk (subject and resource searches): the token is a listing cursor (cursor.ts), so every
 * page answers at the first page's revision; a token whose revision the PDP no longer holds gets 410. Without a
 * `page` object, a result of at most MAX_PAGE entries comes whole, without `page`.
 */
function walked<T>(
  body: Json,
  list: (request: ListRequest) => ListAnswer<T>,
  result: (item: T) => Json,
): Json {
  const { page, digest, limit, token } = pageRequest(body);
  const loc = ["body", "page", "token"];
  const cursor = token === undefined ? undefined : decodeCursor(token, digest, loc, bad);
  const answer = pageOrGone(list({ size: limit, ...(cursor && { cursor }) }));
  const results = answer.items.map(result);
  if (page === undefined && answer.next === undefined) return { results };
  const nextToken = answer.next === undefined ? "" : encodeCursor(answer.next, digest);
  return { page: { next_token: nextToken, count: results.length }, results };
}

const ENDPOINTS = {
  access_evaluation_endpoint: "/access/v1/evaluation",
  access_evaluations_endpoint: "/access/v1/evaluations",
  search_subject_endpoint: "/access/v1/search/subject",
  search_resource_endpoint: "/access/v1/search/resource",
  search_action_endpoint: "/access/v1/search/action",
} as const;

/** Registered on the PDP app by server.ts; its own context, so that its errors can be 400 rather than 422. */
export async function authzenRoutes(app: FastifyInstance, opts: { deps: PdpDeps }): Promise<void> {
  const { deps } = opts;
  // AuthZEN answers a malformed request with 400; everything else as on every other route.
  app.setErrorHandler(
    errorHandler({ publicUrl: deps.publicUrl, outage: deps.outage }, (e) =>
      e.code === "INVALID_INPUT" ? new AppError("BAD_REQUEST", e.message, e.additionalInfo, e.detail) : e,
    ),
  );
  // The specification: a request that carries X-Request-ID gets the same id back.
  app.addHook("onSend", async (request, reply) => {
    const id = request.headers["x-request-id"];
    if (typeof id === "string") void reply.header("x-request-id", id);
  });

  app.get("/.well-known/authzen-configuration", async (request) => {
    const base = `${request.protocol}://${request.host}`;
    return {
      policy_decision_point: base,
      ...Object.fromEntries(Object.entries(ENDPOINTS).map(([name, path]) => [name, `${base}${path}`])),
    };
  });

  app.post(ENDPOINTS.access_evaluation_endpoint, async (request) => {
    const target = await prepare(deps, request);
    const evaluation = evaluationOf(object(request.body, ["body"], "the body"), ["body"]);
    return { decision: decide(deps, target, evaluation, "check").allow };
  });

  app.post(ENDPOINTS.access_evaluations_endpoint, async (request) => {
    const target = await prepare(deps, request);
    const body = object(request.body, ["body"], "the body");
    return evaluations(deps, target, body);
  });

  app.post(ENDPOINTS.search_subject_endpoint, async (request) => {
    const target = await prepare(deps, request);
    const body = object(request.body, ["body"], "the body");
    const subject = entity(body["subject"], ["body", "subject"], "subject", false);
    const action = actionName(body["action"], ["body", "action"]);
    const resource = entity(body["resource"], ["body", "resource"], "resource", true);
    const context = contextOf(body["context"], ["body", "context"]);
    const engine = target.replica.engine;
    const query = { action, resource: queryResource(resource, context), context };
    return walked(
      body,
      (request) => (subject.type === SUBJECT_TYPE ? engine.listSubjects(query, request) : nothing()),
      (id) => ({ type: SUBJECT_TYPE, id }),
    );
  });

  app.post(ENDPOINTS.search_resource_endpoint, async (request) => {
    const target = await prepare(deps, request);
    const body = object(request.body, ["body"], "the body");
    const subject = entity(body["subject"], ["body", "subject"], "subject", true);
    const action = actionName(body["action"], ["body", "action"]);
    const resource = entity(body["resource"], ["body", "resource"], "resource", false);
    const context = contextOf(body["context"], ["body", "context"]);
    const query = { user: queryUser(subject), action, type: resource.type, context };
    return walked<{ key: string }>(
      body,
      (request) =>
        subject.type === SUBJECT_TYPE ? target.replica.engine.listResources(query, request) : nothing(),
      (item) => ({ type: resource.type, id: item.key }),
    );
  });

  app.post(ENDPOINTS.search_action_endpoint, async (request) => {
    const target = await prepare(deps, request);
    const body = object(request.body, ["body"], "the body");
    const subject = entity(body["subject"], ["body", "subject"], "subject", true);
    const resource = entity(body["resource"], ["body", "resource"], "resource", true);
    const context = contextOf(body["context"], ["body", "context"]);
    const engine = target.replica.engine;
    const names =
      subject.type === SUBJECT_TYPE
        ? engine.searchActions({
            user: queryUser(subject),
            resource: queryResource(resource, context),
            context,
          })
        : [];
    return paged(
      body,
      names.map((name) => ({ name })),
    );
  });
}
