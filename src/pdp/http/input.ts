import { AppError } from "../../lib/errors.ts";
import { DEFAULT_TENANT } from "../engine/index.ts";
import type { Attributes, CheckQuery, QueryResource, QueryUser } from "../engine/types.ts";

/**
 * Turns what Permit's SDKs send into engine queries: a user as a key or an object (a whole UserRead is fine;
 * unknown fields are ignored, camelCase names accepted), a resource as "type", "type:key" or an object, the
 * tenant defaulting to "default".
 */
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const bad = (message: string, loc: (string | number)[]): AppError =>
  new AppError("INVALID_INPUT", message, undefined, [{ loc, msg: message, type: "value_error" }]);

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export function toUser(raw: unknown, loc: (string | number)[] = ["body", "user"]): QueryUser {
  if (typeof raw === "string" && raw !== "") return { key: raw };
  if (!isObject(raw) || typeof raw["key"] !== "string" || raw["key"] === "") {
    throw bad("user must be a key or an object with a string key", loc);
  }
  const user: QueryUser = { key: raw["key"] };
  const email = str(raw["email"]);
  const first = str(raw["first_name"]) ?? str(raw["firstName"]);
  const last = str(raw["last_name"]) ?? str(raw["lastName"]);
  if (email !== undefined) user.email = email;
  if (first !== undefined) user.first_name = first;
  if (last !== undefined) user.last_name = last;
  if (raw["attributes"] !== undefined && raw["attributes"] !== null) {
    if (!isObject(raw["attributes"])) throw bad("user.attributes must be an object", [...loc, "attributes"]);
    user.attributes = raw["attributes"];
  }
  return user;
}

export function toResource(raw: unknown, loc: (string | number)[] = ["body", "resource"]): QueryResource {
  if (typeof raw === "string" && raw !== "") {
    const i = raw.indexOf(":");
    return i < 0
      ? { type: raw, tenant: DEFAULT_TENANT }
      : { type: raw.slice(0, i), key: raw.slice(i + 1), tenant: DEFAULT_TENANT };
  }
  if (!isObject(raw) || typeof raw["type"] !== "string" || raw["type"] === "") {
    throw bad("resource must be 'type', 'type:key' or an object with a string type", loc);
  }
  const resource: QueryResource = { type: raw["type"], tenant: str(raw["tenant"]) || DEFAULT_TENANT };
  const key = str(raw["key"]);
  if (key) resource.key = key;
  if (raw["attributes"] !== undefined && raw["attributes"] !== null) {
    if (!isObject(raw["attributes"]))
      throw bad("resource.attributes must be an object", [...loc, "attributes"]);
    resource.attributes = raw["attributes"];
  }
  return resource;
}

export function toContext(raw: unknown, loc: (string | number)[] = ["body", "context"]): Attributes {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw bad("context must be an object", loc);
  return raw;
}

export function toCheck(
  raw: unknown,
  loc: (string | number)[] = ["body"],
  sharedContext?: Attributes,
): CheckQuery {
  if (!isObject(raw)) throw bad("the check must be an object with user, action and resource", loc);
  const action = raw["action"];
  if (typeof action !== "string" || action === "")
    throw bad("action must be a non-empty string", [...loc, "action"]);
  const context = { ...sharedContext, ...toContext(raw["context"], [...loc, "context"]) };
  return {
    user: toUser(raw["user"], [...loc, "user"]),
    action,
    resource: toResource(raw["resource"], [...loc, "resource"]),
    context,
  };
}

export function toCheckList(
  raw: unknown,
  loc: (string | number)[] = ["body"],
  sharedContext?: Attributes,
): CheckQuery[] {
  if (!Array.isArray(raw)) throw bad("the body must be an array of checks", loc);
  if (raw.length > 1000) throw bad("at most 1000 checks per request", loc);
  return raw.map((c, i) => toCheck(c, [...loc, i], sharedContext));
}

export function toStringList(raw: unknown, loc: (string | number)[]): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw) || !raw.every((v) => typeof v === "string"))
    throw bad("must be a list of strings", loc);
  return raw as string[];
}
