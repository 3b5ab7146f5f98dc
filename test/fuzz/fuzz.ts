/**
 * A seeded HTTP fuzzer for the write routes of /v2 and the PDP ports: mutated bodies (wrong types, missing fields,
 * huge strings, deep nesting, invalid UTF-8, truncated JSON), odd content types and random path ids, sent over real
 * HTTP. The same seed sends the same requests. Used by test/api/fuzz.test.ts (small) and `npm run fuzz` (large).
 */
import type { FastifyInstance } from "fastify";
import { createTestEnv, type TestEnv } from "../helpers/app.ts";
import { startTestPdp, type TestPdp } from "../helpers/pdp.ts";

/** mulberry32: small, fast and good enough to pick mutations reproducibly. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  return { next, int, pick };
}
type Random = ReturnType<typeof random>;

export interface FuzzRequest {
  port: "api" | "pdp" | "opa";
  method: string;
  path: string;
  contentType: string | undefined;
  body: Buffer | undefined;
}

export interface FuzzResult {
  sent: number;
  /** Requests answered with a 5xx (or not answered): none is the goal. */
  failures: { index: number; request: string; status: number | string; body: string }[];
  statuses: Record<number, number>;
}

const FIELD_NAMES = [
  "key",
  "name",
  "description",
  "email",
  "first_name",
  "attributes",
  "role_assignments",
  "role",
  "tenant",
  "user",
  "resource",
  "resource_instance",
  "permissions",
  "actions",
  "roles",
  "relations",
  "extends",
  "granted_to",
  "conditions",
  "type",
  "subject",
  "relation",
  "object",
  "settings",
  "object_type",
  "access_level",
  "project_id",
  "environment_id",
  "target_env",
  "scope",
  "user_set",
  "resource_set",
  "permission",
  "operations",
  "action",
  "context",
  "input",
  "checks",
  "evaluations",
  "min_revision",
];

function randomString(r: Random): string {
  switch (r.int(8)) {
    case 0:
      return "";
    case 1:
      return "x".repeat(r.pick([256, 1025, 70_000]));
    case 2:
      return r.pick([
        "__proto__",
        "constructor",
        "../..",
        "%00",
        "a b",
        "Ω≈ç√",
        "🙂",
        "\u0000",
        "'; drop table x;--",
      ]);
    case 3:
      return crypto.randomUUID();
    case 4:
      return r.pick(["admin", "viewer", "default", "production", "document", "read", "folder", "t1"]);
    default:
      return `k${r.int(1000)}`;
  }
}

function randomValue(r: Random, depth = 0): unknown {
  switch (r.int(depth > 3 ? 6 : 9)) {
    case 0:
      return null;
    case 1:
      return r.pick([true, false]);
    case 2:
      return r.pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308]);
    case 3:
    case 4:
    case 5:
      return randomString(r);
    case 6:
      return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
    default:
      return randomObject(r, depth + 1);
  }
}

function randomObject(r: Random, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = r.int(6); i > 0; i--)
    out[r.next() < 0.85 ? r.pick(FIELD_NAMES) : randomString(r)] = randomValue(r, depth);
  return out;
}

type Schema = Record<string, unknown>;

/** A value the route's own request schema accepts (mostly), so that many requests get past validation. */
function fromSchema(r: Random, schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 6) return randomValue(r, 3);
  const branches = (schema["anyOf"] ?? schema["oneOf"]) as Schema[] | undefined;
  if (branches && branches.length > 0) return fromSchema(r, r.pick(branches), depth);
  if ("const" in schema) return schema["const"];
  if (Array.isArray(schema["enum"])) return r.pick(schema["enum"] as unknown[]);
  const type = Array.isArray(schema["type"]) ? r.pick(schema["type"] as string[]) : schema["type"];
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      const props = (schema["properties"] ?? {}) as Record<string, Schema>;
      const required = (schema["required"] ?? []) as string[];
      for (const [name, sub] of Object.entries(props)) {
        if (required.includes(name) || r.next() < 0.4) out[name] = fromSchema(r, sub, depth + 1);
      }
      if (Object.keys(props).length === 0 && schema["additionalProperties"] !== false) {
        // Parsed here, so no deeper than the stack of JSON.stringify allows; deep() sends thousands as text.
        return r.next() < 0.1 ? JSON.parse(deepValue(r, 200)) : randomObject(r, 2);
      }
      return out;
    }
    case "array": {
      const items = schema["items"] as Schema | undefined;
      return Array.from({ length: r.int(3) }, () => fromSchema(r, items, depth + 1));
    }
    case "string": {
      if (schema["format"] === "email") return `fz${r.int(50)}@example.com`;
      if (schema["format"] === "uuid") return crypto.randomUUID();
      if (schema["format"] === "date-time") return new Date(r.int(2 ** 41)).toISOString();
      const known = [
        "fz1",
        "fz2",
        "viewer",
        "admin",
        "default",
        "document",
        "folder",
        "read",
        "write",
        "parent",
      ];
      return r.next() < 0.6 ? r.pick(known) : `fz${r.int(50)}`;
    }
    case "integer":
    case "number": {
      const min = typeof schema["minimum"] === "number" ? schema["minimum"] : 0;
      return min + r.int(10);
    }
    case "boolean":
      return r.next() < 0.5;
    case "null":
      return null;
    default:
      return randomValue(r, 3);
  }
}

/** Objects or arrays nested up to a few thousand deep, as JSON text. */
function deepValue(r: Random, max = 5000): string {
  const depth = Math.min(max, r.pick([20, 62, 65, 200, 5000]));
  const [open, close] = r.next() < 0.5 ? ["[", "]"] : ['{"a":', "}"];
  return `${open.repeat(depth)}1${close.repeat(depth)}`;
}

/** A plausible body first (so validation passes sometimes and services run), then mutated. */
function plausible(r: Random): Record<string, unknown> {
  const key = `fz${r.int(50)}`;
  return r.pick([
    () => ({ key, name: key }),
    () => ({ key, email: `${key}@example.com`, attributes: randomObject(r) }),
    () => ({ key, name: key, actions: { read: {}, write: {} } }),
    () => ({ key, name: key, permissions: [r.pick(["document:read", "read", "x:y:z"])] }),
    () => ({ user: key, role: r.pick(["viewer", "admin"]), tenant: "default" }),
    () => ({ subject: `user:${key}`, relation: "parent", object: "folder:f1", tenant: "default" }),
    () => ({ user: { key }, action: "read", resource: { type: "document", tenant: "default" } }),
    () => ({ input: { user: { key }, action: "read", resource: { type: "document" } } }),
    () => ({ target_env: { new: { key, name: key } } }),
    () => ({ object_type: r.pick(["org", "project", "env"]), name: key }),
  ])();
}

function mutate(r: Random, body: Record<string, unknown>): Record<string, unknown> {
  const out = { ...body };
  const keys = Object.keys(out);
  for (let i = r.int(3); i >= 0; i--) {
    const k = r.pick(keys.length > 0 ? keys : FIELD_NAMES);
    switch (r.int(4)) {
      case 0:
        delete out[k];
        break;
      case 1:
        out[k] = randomValue(r);
        break;
      case 2:
        out[r.pick(FIELD_NAMES)] = randomValue(r);
        break;
      default:
        break;
    }
  }
  return out;
}

/** A body (the route's, when it has a schema) with one field replaced by deeply nested JSON. */
function deep(r: Random, body: unknown): string {
  const base =
    body !== null && typeof body === "object" && !Array.isArray(body) ? { ...body } : { key: "deep" };
  const field = r.pick([...Object.keys(base), "attributes", "settings", "context"]);
  const marker = `__deep_${r.int(1e9)}__`;
  return JSON.stringify({ ...base, [field]: marker }).replace(`"${marker}"`, () => deepValue(r));
}

function randomBody(
  r: Random,
  schema: Schema | undefined,
): { contentType: string | undefined; body: Buffer | undefined } {
  const json = "application/json";
  const valid = () => (schema ? fromSchema(r, schema) : plausible(r));
  const asObject = (v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : plausible(r);
  switch (r.int(14)) {
    case 0:
      return { contentType: undefined, body: undefined };
    case 1:
      return { contentType: json, body: Buffer.from(deep(r, valid())) };
    case 2: {
      // invalid UTF-8 inside a string
      const bad = Buffer.from([r.pick([0xff, 0xc3, 0xed, 0xe2, 0x80])]);
      return {
        contentType: json,
        body: Buffer.concat([Buffer.from('{"key":"u'), bad, Buffer.from('","name":"x"}')]),
      };
    }
    case 3: {
      const text = JSON.stringify(valid());
      return { contentType: json, body: Buffer.from(text.slice(0, r.int(text.length))) };
    }
    case 4:
      return {
        contentType: r.pick([
          "text/plain",
          "application/xml",
          "multipart/form-data; boundary=x",
          "application/json; charset=latin1",
          "",
          "application/x-www-form-urlencoded",
        ]),
        body: Buffer.from(JSON.stringify(plausible(r))),
      };
    case 5:
      return { contentType: json, body: Buffer.from(JSON.stringify(randomValue(r))) };
    case 6:
      return {
        contentType: json,
        body: Buffer.from(JSON.stringify([plausible(r), mutate(r, plausible(r))])),
      };
    case 7:
    case 8:
    case 9:
      return { contentType: json, body: Buffer.from(JSON.stringify(valid())) };
    default:
      return { contentType: json, body: Buffer.from(JSON.stringify(mutate(r, asObject(valid())))) };
  }
}

const PDP_PATHS = [
  "/allowed",
  "/allowed/bulk",
  "/allowed/all-tenants",
  "/user-permissions",
  "/authorized_users",
  "/user-tenants",
  "/access/v1/evaluation",
  "/access/v1/evaluations",
  "/v2/facts/default/production/users",
  "/v2/facts/default/production/role_assignments",
];
const OPA_PATHS = ["/v1/data/permit/root", "/v1/data/permit/bulk"];

export interface Route {
  method: string;
  path: string;
  body: Schema | undefined;
}

/** The write routes of /v2, from the OpenAPI document, with their request body schemas. */
export function writeRoutes(app: FastifyInstance): Route[] {
  const doc = app.swagger() as {
    paths: Record<
      string,
      Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>
    >;
  };
  const routes: Route[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith("/v2/")) continue;
    for (const method of ["post", "put", "patch", "delete"]) {
      const op = ops[method];
      if (op)
        routes.push({
          method: method.toUpperCase(),
          path,
          body: op.requestBody?.content?.["application/json"]?.schema,
        });
    }
  }
  return routes;
}

/** The fuzzer's own objects, and the other organization's (whose ids it also tries). */
interface Ids {
  own: string[];
  foreign: string[];
}

/** Deleting the fuzzer's own project or environment would end the run early (its keys go with them). */
const DESTRUCTIVE = new Set(["DELETE /v2/projects/{proj_id}", "DELETE /v2/projects/{proj_id}/envs/{env_id}"]);

function fillPath(r: Random, method: string, template: string, ids: Ids): string {
  const own = !DESTRUCTIVE.has(`${method} ${template}`);
  return template.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    if (own && name === "proj_id" && r.next() < 0.8) return r.pick(["default", ids.own[0] ?? "default"]);
    if (own && name === "env_id" && r.next() < 0.8) return r.pick(["production", "development"]);
    const roll = r.next();
    const raw =
      roll < 0.3
        ? r.pick(ids.foreign)
        : roll < 0.5 && own
          ? r.pick(ids.own)
          : roll < 0.6
            ? "x".repeat(300)
            : randomString(r);
    return encodeURIComponent(raw.slice(0, 2000));
  });
}

export function generate(seed: number, count: number, routes: Route[], ids: Ids): FuzzRequest[] {
  const r = random(seed);
  const out: FuzzRequest[] = [];
  for (let i = 0; i < count; i++) {
    const roll = r.next();
    if (roll < 0.7) {
      const route = r.pick(routes);
      const { contentType, body } = randomBody(r, route.body);
      out.push({
        port: "api",
        method: route.method,
        path: fillPath(r, route.method, route.path, ids),
        contentType,
        body: route.method === "DELETE" && !route.body && r.next() < 0.5 ? undefined : body,
      });
      continue;
    }
    const { contentType, body } = randomBody(r, undefined);
    if (roll < 0.92) {
      out.push({ port: "pdp", method: "POST", path: r.pick(PDP_PATHS), contentType, body });
    } else {
      out.push({ port: "opa", method: "POST", path: r.pick(OPA_PATHS), contentType, body });
    }
  }
  return out;
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}

export interface FuzzTarget {
  env: TestEnv;
  pdp: TestPdp;
  urls: Record<FuzzRequest["port"], string>;
  /** the fuzzer's keys: the first organization's admin key and its production environment key */
  keys: { api: string; pdp: string };
  ids: Ids;
  /** The other organization's user, role and assignment, read through its own key. */
  control(): Promise<unknown>;
  close(): Promise<void>;
}

/** A real server (control plane and both PDP ports) with a control object in an organization the fuzzer cannot reach. */
export async function startFuzzTarget(): Promise<FuzzTarget> {
  const env = await createTestEnv("sqlite");
  const { acme, globex, call } = env;
  const G = "/v2/schema/default/production";
  const GF = "/v2/facts/default/production";
  const must = async (method: "POST" | "GET", url: string, body?: unknown) => {
    const res = await call(globex.adminKey, method, url, body);
    if (res.status >= 300) throw new Error(`${method} ${url} -> ${res.status} ${res.body}`);
    return res.json;
  };
  await must("POST", `${G}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {}, write: {} },
  });
  const role = await must("POST", `${G}/roles`, {
    key: "viewer",
    name: "Viewer",
    permissions: ["document:read"],
  });
  const user = await must("POST", `${GF}/users`, {
    key: "control",
    email: "control@example.com",
    attributes: { a: 1 },
  });
  await must("POST", `${GF}/role_assignments`, { user: "control", role: "viewer", tenant: "default" });
  const control = async () => ({
    user: await must("GET", `${GF}/users/control`),
    role: await must("GET", `${G}/roles/viewer`),
    assignments: await must("GET", `${GF}/role_assignments?user=control`),
  });
  const pdpKey = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret as string;
  const pdp = await startTestPdp(env);
  const urls = { api: await listen(env.app), pdp: pdp.url, opa: pdp.opaUrl };
  return {
    env,
    pdp,
    urls,
    keys: { api: acme.adminKey, pdp: pdpKey },
    ids: {
      own: [acme.projectId, acme.envs.production, acme.id],
      foreign: [
        globex.id,
        globex.projectId,
        globex.envs.production,
        user.id,
        role.id,
        "control",
        "viewer",
        "document",
        globex.adminKeyId,
      ],
    },
    control,
    async close() {
      await pdp.close();
      await env.app.close();
      await env.store.close();
    },
  };
}

const describe = (q: FuzzRequest) =>
  `${q.port} ${q.method} ${q.path.slice(0, 120)} [${q.contentType ?? "no content type"}] ${q.body ? q.body.subarray(0, 120).toString("latin1") : ""}`;

/** Sends `count` requests from `seed`, `concurrency` at a time; every answer must be below 500. */
export async function runFuzz(
  target: FuzzTarget,
  seed: number,
  count: number,
  concurrency = 8,
): Promise<FuzzResult> {
  const requests = generate(seed, count, writeRoutes(target.env.app), target.ids);
  const result: FuzzResult = { sent: 0, failures: [], statuses: {} };
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const index = next++;
      const q = requests[index] as FuzzRequest;
      const headers: Record<string, string> = {
        authorization: `Bearer ${q.port === "api" ? target.keys.api : target.keys.pdp}`,
      };
      if (q.contentType !== undefined) headers["content-type"] = q.contentType;
      // Facts writes through the PDP would otherwise wait up to 10 s each for the PDP to hold them.
      if (q.port === "pdp") headers["x-wait-timeout"] = "0";
      try {
        const res = await fetch(target.urls[q.port] + q.path, {
          method: q.method,
          headers,
          ...(q.body !== undefined && { body: new Uint8Array(q.body) }),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        result.statuses[res.status] = (result.statuses[res.status] ?? 0) + 1;
        if (res.status >= 500)
          result.failures.push({ index, request: describe(q), status: res.status, body: text.slice(0, 300) });
      } catch (error) {
        result.failures.push({ index, request: describe(q), status: String(error), body: "" });
      }
      result.sent++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return result;
}
