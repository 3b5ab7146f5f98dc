// Gatehouse's listing routes (docs/data-filtering.md): `/list/resources` (the instances of a type a user may act
// on) and `/list/subjects` (the users who may act on a resource), a page at a time. Every page of one walk answers
// at the revision of its first page; the cursor is opaque (cursor.ts) and a cursor too old gets 410.

import type { FastifyInstance } from "fastify";
import { AppError } from "../../lib/errors.ts";
import type { ListAnswer, ListRequest } from "../engine/index.ts";
import { decodeCursor, encodeCursor, pageOrGone, requestDigest } from "./cursor.ts";
import { prepare, type PdpDeps, type PdpTarget } from "./decide.ts";
import { toContext, toResource, toUser } from "./input.ts";

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

type Body = Record<string, unknown>;

const invalid = (message: string, loc: (string | number)[]) =>
  new AppError("INVALID_INPUT", message, undefined, [{ loc, msg: message, type: "value_error" }]);

function requiredAction(body: Body): string {
  const action = body["action"];
  if (typeof action !== "string" || action === "")
    throw invalid("action must be a non-empty string", ["body", "action"]);
  return action;
}

/** One page: `page_size` and `cursor` read from the body, the rest of which the cursor is bound to. */
function listed<T>(rawBody: unknown, list: (request: ListRequest) => ListAnswer<T>) {
  const body = (rawBody ?? {}) as Body;
  const { page_size: rawSize, cursor: rawCursor, ...rest } = body;
  const size = rawSize ?? DEFAULT_PAGE_SIZE;
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw invalid(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}`, ["body", "page_size"]);
  }
  const digest = requestDigest(rest);
  const cursor =
    rawCursor === undefined || rawCursor === null
      ? undefined
      : decodeCursor(rawCursor, digest, ["body", "cursor"], invalid);
  const page = pageOrGone(list({ size, ...(cursor && { cursor }) }));
  return {
    results: page.items,
    next_cursor: page.next === undefined ? null : encodeCursor(page.next, digest),
    revision: page.revision,
  };
}

/** `/list/resources`: `{user, action, resource: "type" | {type, tenant?}, context?, page_size?, cursor?}`. */
export function listResourcesOf(target: PdpTarget, rawBody: unknown) {
  const body = (rawBody ?? {}) as Body;
  const resource = toResource(body["resource"]);
  if (resource.key !== undefined) {
    throw invalid("a listing is about a resource type: resource.key must be absent", [
      "body",
      "resource",
      "key",
    ]);
  }
  const query = {
    user: toUser(body["user"]),
    action: requiredAction(body),
    type: resource.type,
    context: toContext(body["context"]),
    ...(resource.tenant && { tenant: resource.tenant }),
  };
  return listed(rawBody, (request) => target.replica.engine.listResources(query, request));
}

/** `/list/subjects`: `{action, resource: "type:key" | {type, key?, tenant?}, context?, page_size?, cursor?}`. */
export function listSubjectsOf(target: PdpTarget, rawBody: unknown) {
  const body = (rawBody ?? {}) as Body;
  const query = {
    action: requiredAction(body),
    resource: toResource(body["resource"]),
    context: toContext(body["context"]),
  };
  const answer = listed(rawBody, (request) => target.replica.engine.listSubjects(query, request));
  return { ...answer, results: answer.results.map((key) => ({ key })) };
}

export function registerListingRoutes(app: FastifyInstance, deps: PdpDeps): void {
  app.post("/list/resources", async (request) => listResourcesOf(await prepare(deps, request), request.body));
  app.post("/list/subjects", async (request) => listSubjectsOf(await prepare(deps, request), request.body));
}
