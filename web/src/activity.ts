/**
 * A recorded write (an entry of GET /v2/history with its request body) as a sentence: "ada@example.com assigned
 * viewer to bob in acme", "key ci-deploy deleted resource invoice". Paths the rules below do not know read as
 * "created / updated / deleted <thing> <key>" from the path's last collection and key.
 */
export interface Write {
  method: string;
  path: string;
  actor_type: string;
  actor_display_name?: string;
  project_key?: string;
  env_key?: string;
  request_body?: string;
}

/** The methods of writes: the activity's calls, and the API log's default filter. */
export const WRITES = ["POST", "PUT", "PATCH", "DELETE"];

/** The words of a path's collections. */
const THING: Record<string, string> = {
  users: "user",
  tenants: "tenant",
  resource_instances: "instance",
  resources: "resource",
  roles: "role",
  relationship_tuples: "relationship",
  projects: "project",
  envs: "environment",
  "api-key": "API key",
  condition_sets: "set",
  set_rules: "set rule",
  actions: "action",
  action_groups: "action group",
  attributes: "attribute",
  relations: "relation",
  members: "member",
  invites: "invite",
  orgs: "organization",
  proxy_configs: "proxy config",
  permissions: "permissions",
};

const AUTH: Record<string, string> = {
  login: "logged in",
  logout: "logged out",
  password: "changed their password",
  setup: "set up Gatehouse",
  "invites/accept": "accepted an invitation",
  "session/organization": "switched organization",
};

const VERB: Record<string, string> = { POST: "created", PUT: "updated", PATCH: "updated", DELETE: "deleted" };

type Body = Record<string, unknown>;

function parseBody(text: string | undefined): Body {
  try {
    const value: unknown = JSON.parse(text ?? "");
    // A list (invites): its first item names the object.
    const first: unknown = Array.isArray(value) ? value[0] : value;
    return typeof first === "object" && first !== null && !Array.isArray(first) ? (first as Body) : {};
  } catch {
    return {};
  }
}

/**
 * A value from the call (a key, a name) isolated by U+2068 … U+2069, the plain-text form of `<bdi>`: its own
 * direction controls cannot reorder the words around it.
 */
export const iso = (value: string): string => `\u2068${value}\u2069`;

const str = (value: unknown): string | undefined =>
  typeof value === "string" || typeof value === "number" ? iso(String(value)) : undefined;

/** Who made the call: a member by e-mail, a key as "key <name>". */
export function actorOf(w: Write): string {
  const name = w.actor_display_name === undefined ? "someone" : iso(w.actor_display_name);
  return w.actor_type === "api_key" ? `key ${name}` : name;
}

/** An assignment's place: "in acme", "on document:q3". */
const where = (b: Body) =>
  str(b["resource_instance"])
    ? ` on ${str(b["resource_instance"])}`
    : str(b["tenant"])
      ? ` in ${str(b["tenant"])}`
      : "";

/** The rules for calls whose meaning is in their body; undefined when the path is not one of them. */
function special(
  w: Write,
  rest: string[],
  b: Body,
  value: (segment: string | undefined) => string | undefined,
): string | undefined {
  const [collection, raw, sub] = rest;
  const id = value(raw);
  const deleting = w.method === "DELETE";
  if (collection === "role_assignments" && id === undefined) {
    const role = str(b["role"]) ?? "a role";
    const user = str(b["user"]) ?? "a user";
    return deleting ? `removed ${role} from ${user}${where(b)}` : `assigned ${role} to ${user}${where(b)}`;
  }
  if (collection === "users" && id !== undefined && sub === "roles") {
    const role = str(b["role"]) ?? "a role";
    return deleting ? `removed ${role} from ${id}${where(b)}` : `assigned ${role} to ${id}${where(b)}`;
  }
  if (collection === "relationship_tuples" && id === undefined) {
    const tuple = `${str(b["subject"]) ?? "?"} ${str(b["relation"]) ?? "?"} ${str(b["object"]) ?? "?"}`;
    return deleting ? `removed the relationship ${tuple}` : `related ${tuple}`;
  }
  if (rest.at(-1) === "permissions") {
    const role = value(rest.at(-2)) ?? "a role";
    const perms = Array.isArray(b["permissions"])
      ? b["permissions"].map((p) => iso(String(p))).join(", ")
      : "permissions";
    return deleting ? `revoked ${perms} from role ${role}` : `granted ${perms} to role ${role}`;
  }
  if (rest.includes("bulk")) {
    const what = rest.filter((s) => s !== "bulk").join(" ");
    return `${deleting ? "deleted" : "wrote"} ${what.replace(/_/g, " ")} in bulk`;
  }
  if (rest[0] === "auth") return AUTH[rest.slice(1).join("/")] ?? `called ${w.path}`;
  return undefined;
}

/** The sentence for one write. */
export function sentence(w: Write): string {
  const segments = w.path
    .split("/")
    .filter(Boolean)
    .slice(1) // without "v2"
    .map((segment) => segment.replace(/%[0-9A-F]{2}/gi, (c) => decodeURIComponent(c)));
  const value = (segment: string | undefined) => (segment === undefined ? undefined : iso(segment));
  // /facts/{proj}/{env}/... and /schema/{proj}/{env}/... name their place first.
  const scoped = segments[0] === "facts" || segments[0] === "schema";
  const rest = scoped ? segments.slice(3) : segments;
  const body = parseBody(w.request_body);
  const place = scoped ? ` (${value(segments[1])} / ${value(segments[2])})` : "";
  const said = special(w, rest, body, value);
  if (said) return `${actorOf(w)} ${said}${place}`;
  const last = rest.at(-1) ?? "something";
  if (rest.length > 1 && rest.length % 2 === 1 && !(last in THING)) {
    // An action on an object (rotate-secret, copy): the segment after the object's key.
    const owner = rest.at(-3) ?? "";
    return `${actorOf(w)} ran ${last.replace(/[-_]/g, " ")} on ${THING[owner] ?? owner} ${value(rest.at(-2))}${place}`;
  }
  // The last collection and, when the path names one, its key; a create names its key in the body.
  const thing = rest.length % 2 === 0 ? (rest.at(-2) ?? last) : last;
  let key = rest.length % 2 === 0 ? value(last) : undefined;
  if (w.method === "POST" && key === undefined)
    key = str(body["key"]) ?? str(body["name"]) ?? str(body["email"]);
  const noun = THING[thing] ?? thing.replace(/[-_]/g, " ");
  return `${actorOf(w)} ${VERB[w.method] ?? w.method.toLowerCase()} ${noun}${key ? ` ${key}` : ""}${place}`;
}
