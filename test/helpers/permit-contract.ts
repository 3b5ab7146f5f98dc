import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { ValidateFunction } from "ajv";

/**
 * Validates our responses against the response schemas of Permit's published OpenAPI document
 * (../shared/reference/permit-openapi.json), so Permit's SDKs can read what we send.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const docPath = path.resolve(here, "../../../shared/reference/permit-openapi.json");

interface OpenApiDoc {
  paths: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
  >;
  components: { schemas: Record<string, unknown> };
}

let doc: OpenApiDoc | undefined;
let ajv: InstanceType<typeof Ajv2020> | undefined;
const cache = new Map<string, ValidateFunction>();

function load(): { doc: OpenApiDoc; ajv: InstanceType<typeof Ajv2020> } {
  if (!doc || !ajv) {
    doc = JSON.parse(fs.readFileSync(docPath, "utf8")) as OpenApiDoc;
    ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(ajv);
    ajv.addSchema({ $id: "permit", components: doc.components });
  }
  return { doc, ajv };
}

/** Rewrites local refs so one compiled document can resolve them. */
const rewriteRefs = (schema: unknown): unknown =>
  JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"permit#/components/'));

/**
 * Fields Gatehouse adds to a Permit shape (docs/compatibility.md), left out before the body is compared: an
 * organization's region and the base URL of its deployment (docs/regions.md), the key that created an API key, an invite's end.
 */
const EXTENSIONS: Record<string, readonly string[]> = {
  "/v2/orgs": ["region", "api_url"],
  "/v2/orgs/active/org": ["region", "api_url"],
  "/v2/orgs/{org_id}": ["region", "api_url"],
  "/v2/api-key": ["created_by_key"],
  "/v2/api-key/{api_key_id}": ["created_by_key"],
  "/v2/api-key/{proj_id}/{env_id}": ["created_by_key"],
  "/v2/api-key/{api_key_id}/rotate-secret": ["created_by_key"],
  "/v2/orgs/{org_id}/invites": ["expires_at"],
};

/** The body without `fields`, in an item, a list of items, or a page of them (`data`). */
const without = (body: unknown, fields: readonly string[]): unknown => {
  if (Array.isArray(body)) return body.map((item) => without(item, fields));
  if (body === null || typeof body !== "object") return body;
  return Object.fromEntries(
    Object.entries(body)
      .filter(([k]) => !fields.includes(k))
      .map(([k, v]) => [k, k === "data" && Array.isArray(v) ? without(v, fields) : v]),
  );
};

/**
 * Returns the list of problems (empty when the body matches) for `method pathTemplate -> status`,
 * e.g. validatePermitResponse("get", "/v2/facts/{proj_id}/{env_id}/users", 200, body).
 */
export function validatePermitResponse(
  method: string,
  pathTemplate: string,
  status: number,
  response: unknown,
): string[] {
  const body = without(response, EXTENSIONS[pathTemplate] ?? []);
  const key = `${method.toLowerCase()} ${pathTemplate} ${status}`;
  let validate = cache.get(key);
  if (!validate) {
    const { doc, ajv } = load();
    const operation = doc.paths[pathTemplate]?.[method.toLowerCase()];
    if (!operation) throw new Error(`permit-openapi.json has no operation ${method} ${pathTemplate}`);
    const schema = operation.responses?.[String(status)]?.content?.["application/json"]?.schema;
    if (!schema)
      throw new Error(`permit-openapi.json has no JSON response ${status} for ${method} ${pathTemplate}`);
    const compiled = ajv.compile(rewriteRefs(schema) as object);
    cache.set(key, compiled);
    validate = compiled;
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"}`);
}
