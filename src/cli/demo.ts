import type { Config } from "../config.ts";
import { StartError } from "../lib/start-error.ts";
import { UsageError } from "./args.ts";

/**
 * `gatehouse demo`: a small example project, made through the running server's public API (so its PDP has it at
 * once), and the checks to try against it. Standard output gets only the example environment's key, so that
 * `ENV_KEY=$(gatehouse demo --api-key "$KEY")` keeps it; what was made and the checks go to standard error.
 * A second run finds the project and prints the key again.
 */

export const DEMO_FLAGS = ["api-key", "url"] as const;
export type DemoFlags = Partial<Record<(typeof DEMO_FLAGS)[number], string>>;

export const DEMO_PROJECT = "demo";
const ENV = "production";
const SCHEMA = `/v2/schema/${DEMO_PROJECT}/${ENV}`;
const FACTS = `/v2/facts/${DEMO_PROJECT}/${ENV}`;

/** What the demo makes, in the order the API needs it. */
const STEPS: [method: string, path: string, body: unknown][] = [
  ["POST", "/v2/projects", { key: DEMO_PROJECT, name: "Demo", description: "made by gatehouse demo" }],
  [
    "POST",
    `${SCHEMA}/resources`,
    {
      key: "folder",
      name: "Folder",
      actions: { read: {}, write: {} },
      roles: { editor: { name: "Editor", permissions: ["read", "write"] } },
    },
  ],
  [
    "POST",
    `${SCHEMA}/resources`,
    {
      key: "document",
      name: "Document",
      actions: { read: {}, write: {}, delete: {} },
      attributes: { classification: { type: "string" } },
      relations: { folder: "folder" },
      roles: {
        editor: {
          name: "Editor",
          permissions: ["read", "write"],
          // The editors of a document's folder edit the document.
          granted_to: {
            users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "folder" }],
          },
        },
      },
    },
  ],
  ["POST", `${SCHEMA}/roles`, { key: "viewer", name: "Viewer", permissions: ["document:read"] }],
  [
    "POST",
    `${SCHEMA}/roles`,
    { key: "editor", name: "Editor", permissions: ["document:read", "document:write"] },
  ],
  [
    "POST",
    `${SCHEMA}/roles`,
    { key: "admin", name: "Admin", permissions: ["document:read", "document:write", "document:delete"] },
  ],
  [
    "POST",
    `${SCHEMA}/condition_sets`,
    {
      key: "auditors",
      name: "Auditors",
      type: "userset",
      conditions: { allOf: [{ "user.department": { equals: "audit" } }] },
    },
  ],
  [
    "POST",
    `${SCHEMA}/condition_sets`,
    {
      key: "public_documents",
      name: "Public documents",
      type: "resourceset",
      resource_id: "document",
      conditions: { allOf: [{ "resource.classification": { equals: "public" } }] },
    },
  ],
  [
    "POST",
    `${FACTS}/set_rules`,
    { user_set: "auditors", permission: "document:read", resource_set: "public_documents" },
  ],
  ["POST", `${FACTS}/tenants`, { key: "acme", name: "Acme" }],
  ["POST", `${FACTS}/tenants`, { key: "globex", name: "Globex" }],
  ["POST", `${FACTS}/users`, { key: "alice", email: "alice@example.com" }],
  ["POST", `${FACTS}/users`, { key: "bob", email: "bob@example.com" }],
  ["POST", `${FACTS}/users`, { key: "carol", email: "carol@example.com" }],
  ["POST", `${FACTS}/users`, { key: "dave", email: "dave@example.com", attributes: { department: "audit" } }],
  ["POST", `${FACTS}/role_assignments`, { user: "alice", role: "viewer", tenant: "acme" }],
  ["POST", `${FACTS}/role_assignments`, { user: "bob", role: "editor", tenant: "globex" }],
  [
    "POST",
    `${FACTS}/relationship_tuples`,
    { subject: "folder:plans", relation: "folder", object: "document:roadmap", tenant: "acme" },
  ],
  [
    "POST",
    `${FACTS}/role_assignments`,
    { user: "carol", role: "editor", tenant: "acme", resource_instance: "folder:plans" },
  ],
];

const MADE = [
  `Created the example project "${DEMO_PROJECT}" (environment ${ENV}):`,
  "  resources   document (read, write, delete; attribute classification), folder (read, write)",
  "  roles       viewer, editor, admin in a tenant; editor of a folder, which makes its documents' editor",
  "  tenants     acme, globex",
  "  users       alice (viewer in acme), bob (editor in globex), carol (editor of folder:plans in acme),",
  "              dave (department audit)",
  "  relation    folder:plans is the folder of document:roadmap",
  "  condition   users of department audit (auditors) read documents of classification public",
];

/** The checks the demo suggests, each with the answer it gets. */
export const DEMO_CHECKS: { body: unknown; allow: boolean; why: string }[] = [
  {
    body: { user: { key: "alice" }, action: "read", resource: { type: "document", tenant: "acme" } },
    allow: true,
    why: "alice is a viewer in acme",
  },
  {
    body: { user: { key: "alice" }, action: "write", resource: { type: "document", tenant: "acme" } },
    allow: false,
    why: "a viewer does not write",
  },
  {
    body: { user: { key: "bob" }, action: "write", resource: { type: "document", tenant: "globex" } },
    allow: true,
    why: "bob is an editor in globex",
  },
  {
    body: {
      user: { key: "carol" },
      action: "write",
      resource: { type: "document", key: "roadmap", tenant: "acme" },
    },
    allow: true,
    why: "carol edits folder:plans, the roadmap's folder",
  },
  {
    body: {
      user: { key: "dave" },
      action: "read",
      resource: { type: "document", tenant: "acme", attributes: { classification: "public" } },
    },
    allow: true,
    why: "dave is an auditor, the document is public",
  },
];

export async function runDemo(config: Config, flags: DemoFlags): Promise<number> {
  const key = flags["api-key"];
  if (!key) throw new UsageError("gatehouse demo needs --api-key (an organization admin key)");
  const base = (flags.url ?? config.publicUrl).replace(/\/+$/, "");
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    }).catch((e: unknown) => {
      const cause = (e as { cause?: { code?: string } }).cause;
      throw new StartError(
        `cannot reach Gatehouse at ${base} (${cause?.code ?? String(cause ?? e)}): is it running?`,
      );
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const existing = await call("GET", `/v2/projects/${DEMO_PROJECT}`);
  if (existing.status === 401 || existing.status === 403) {
    throw new UsageError(
      `the API key was refused (${existing.json["error_code"]}): give an organization admin key`,
    );
  }
  if (existing.status === 200) {
    say(`The example project "${DEMO_PROJECT}" exists already; its environment key is below.`);
  } else {
    for (const [method, path, body] of STEPS) {
      const res = await call(method, path, body);
      if (res.status >= 300) {
        say(`gatehouse demo: ${method} ${path} -> ${res.status} ${JSON.stringify(res.json)}`);
        return 1;
      }
    }
    for (const line of MADE) say(line);
  }
  const envKey = await call("GET", `/v2/api-key/${DEMO_PROJECT}/${ENV}`);
  const secret = envKey.json["secret"];
  if (envKey.status !== 200 || typeof secret !== "string") {
    say(`gatehouse demo: reading the environment key -> ${envKey.status} ${JSON.stringify(envKey.json)}`);
    return 1;
  }
  const pdp = config.pdpPort === 0 ? undefined : `http://${config.host}:${config.pdpPort}`;
  say("");
  say(`The environment key of ${DEMO_PROJECT}/${ENV} is printed on standard output. Checks to try:`);
  say(`  ENV_KEY=${secret}`);
  for (const check of DEMO_CHECKS) {
    say(`  # ${check.why}: ${check.allow}`);
    say(
      `  curl -s -X POST -H "Authorization: Bearer $ENV_KEY" -H 'Content-Type: application/json' ${pdp ?? "<PDP URL>"}/allowed \\\n` +
        `    -d '${JSON.stringify(check.body)}'`,
    );
  }
  process.stdout.write(`${secret}\n`);
  return 0;
}
