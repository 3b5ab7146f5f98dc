import { test, before } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { InjectOptions } from "fastify";
import { sql } from "kysely";
import { describeEachDialect, PUBLIC_URL, type TestEnv } from "../helpers/app.ts";
import { addMember, anonymous, login, PASSWORD } from "../helpers/members.ts";

// Every /v2 operation of docs/openapi.json × every wrong credential, as Unkey's API tests do. What each operation
// needs is read from the document: the project and environment it names ({proj_id}, {env_id}), whether it
// writes (its method), and whether it names another object of the organization (any other path parameter).

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
interface Operation {
  method: Method;
  path: string;
  params: string[];
  /** required query parameters, filled with a valid value */
  query: Record<string, string>;
  /** a valid body, so that a key that gets past the scope check meets the object lookup, not validation */
  body: unknown;
}
interface Schema {
  type?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  format?: string;
  minimum?: number;
  minItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
}
interface DocumentOperation {
  /** `[]` on the public operations (login, accepting an invite, the first setup): they take no credential */
  security?: unknown[];
  parameters?: { in: string; name: string; required?: boolean; schema: Schema }[];
  requestBody?: { content: { "application/json": { schema: Schema } } };
}

const document = JSON.parse(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8")) as {
  paths: Record<string, Record<string, DocumentOperation>>;
};

/** The smallest value the schema accepts: required properties only, the first of each choice. */
function validValue(schema: Schema): unknown {
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return validValue(schema.anyOf[0]!);
  switch (schema.type) {
    case "object":
      return Object.fromEntries(
        (schema.required ?? []).map((k) => [k, validValue(schema.properties?.[k] ?? {})]),
      );
    case "array":
      return Array.from({ length: Math.max(schema.minItems ?? 0, 1) }, () => validValue(schema.items ?? {}));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    case "string":
      if (schema.format === "uuid") return crypto.randomUUID();
      if (schema.format === "date-time") return new Date().toISOString();
      if (schema.format === "email") return "matrix@example.com";
      return "matrix";
    default:
      return {};
  }
}
const METHODS = new Set<string>(["GET", "POST", "PUT", "PATCH", "DELETE"]);
const operations: Operation[] = Object.entries(document.paths)
  .filter(([path]) => path.startsWith("/v2/"))
  .flatMap(([path, ops]) =>
    Object.keys(ops)
      .map((m) => m.toUpperCase())
      .filter((m): m is Method => METHODS.has(m) && ops[m.toLowerCase()]?.security?.length !== 0)
      .map((method): Operation => {
        const op = ops[method.toLowerCase()]!;
        const schema = op.requestBody?.content["application/json"].schema;
        return {
          method,
          path,
          params: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!),
          query: Object.fromEntries(
            (op.parameters ?? [])
              .filter((p) => p.in === "query" && p.required)
              .map((p) => [p.name, String(validValue(p.schema))]),
          ),
          body: schema && validValue(schema),
        };
      }),
  );

/**
 * The one need the document does not carry, so it is listed here: the broadest key level an operation needs
 * (the route config's `need.level`). Operations of the organization itself, which a project
 * or environment key may not call, and operations on a whole project, which an environment key may not call.
 */
const PROJECT_LEVEL = new Set([
  "PATCH /v2/projects/{proj_id}",
  "DELETE /v2/projects/{proj_id}",
  "POST /v2/projects/{proj_id}/envs",
  "DELETE /v2/projects/{proj_id}/envs/{env_id}",
  "POST /v2/projects/{proj_id}/envs/{env_id}/copy",
  "POST /v2/projects/{proj_id}/envs/{env_id}/copy/async",
]);
const ORGANIZATION_LEVEL = new Set([
  "POST /v2/orgs",
  "PATCH /v2/orgs/{org_id}",
  "POST /v2/projects",
  "GET /v2/api-key",
  "POST /v2/api-key",
  "GET /v2/api-key/{proj_id}/{env_id}",
  "GET /v2/api-key/{api_key_id}",
  "DELETE /v2/api-key/{api_key_id}",
  "POST /v2/api-key/{api_key_id}/rotate-secret",
  "GET /v2/members",
  "POST /v2/members",
  "DELETE /v2/members",
  "GET /v2/members/{member_id}",
  "PATCH /v2/members/{member_id}",
  "DELETE /v2/members/{member_id}",
  "GET /v2/orgs/{org_id}/invites",
  "POST /v2/orgs/{org_id}/invites",
  "DELETE /v2/orgs/{org_id}/invites/{invite_id}",
  "GET /v2/orgs/{org_id}/login-settings",
  "PUT /v2/orgs/{org_id}/login-settings",
]);

/** POSTs that only read (checks carry a body): a read key may call them (the route config's `need.access`). */
const READING_POSTS = new Set([
  "POST /v2/pdps/{proj_id}/{env_id}/allowed",
  "POST /v2/pdps/{proj_id}/{env_id}/allowed/bulk",
  "POST /v2/pdps/{proj_id}/{env_id}/user-permissions",
  "POST /v2/pdps/{proj_id}/{env_id}/plan/resources",
  "POST /v2/pdps/{proj_id}/{env_id}/list/resources",
  "POST /v2/pdps/{proj_id}/{env_id}/list/subjects",
  // a plan writes nothing: a read-only key in CI can plan a pull request
  "POST /v2/schema/{proj_id}/{env_id}/policy/plan",
  // a replay decides logged checks on two engines in memory and writes nothing
  "POST /v2/schema/{proj_id}/{env_id}/policy/replay",
]);
const writes = (op: Operation) => op.method !== "GET" && !READING_POSTS.has(`${op.method} ${op.path}`);
const organizationLevel = (op: Operation) => ORGANIZATION_LEVEL.has(`${op.method} ${op.path}`);
const projectLevel = (op: Operation) => organizationLevel(op) || PROJECT_LEVEL.has(`${op.method} ${op.path}`);
const names = (op: Operation, param: string) => op.params.includes(param);

interface Credential {
  name: string;
  /** the Authorization header; undefined sends none */
  header?: (keys: Keys) => string | undefined;
  /** a member's session instead: its cookie, sent with its CSRF token and the public origin */
  session?: string;
  /** the status this credential gets on `op`, or null where it is not a wrong credential for `op` */
  expect: (op: Operation) => 401 | 403 | 404 | null;
}
type Keys = Record<string, string>;

const CREDENTIALS: Credential[] = [
  { name: "no key", header: () => undefined, expect: () => 401 },
  { name: "malformed header", header: () => "Token abc", expect: () => 401 },
  { name: "unknown key", header: () => `Bearer gh_${"0".repeat(40)}`, expect: () => 401 },
  { name: "revoked key", header: (k) => `Bearer ${k["revoked"]}`, expect: () => 401 },
  { name: "rotated-away secret", header: (k) => `Bearer ${k["rotatedAway"]}`, expect: () => 401 },
  {
    // Another organization's objects do not exist for it; operations that name no object act on its own.
    name: "another organization's admin key",
    header: (k) => `Bearer ${k["otherOrg"]}`,
    expect: (op) => (op.params.length > 0 ? 404 : null),
  },
  {
    name: "an environment key of another environment",
    header: (k) => `Bearer ${k["otherEnv"]}`,
    expect: (op) => (names(op, "env_id") || organizationLevel(op) ? 403 : null),
  },
  {
    name: "a project key of another project",
    header: (k) => `Bearer ${k["otherProject"]}`,
    expect: (op) => (names(op, "proj_id") || organizationLevel(op) ? 403 : null),
  },
  {
    // in scope (of the path's environment, else of the organization), but read-only
    name: "a read key on a write operation",
    header: (k) => `Bearer ${k["readEnv"]}`,
    expect: (op) => (writes(op) && names(op, "env_id") ? 403 : null),
  },
  {
    name: "an organization read key on a write operation",
    header: (k) => `Bearer ${k["readOrg"]}`,
    expect: (op) => (writes(op) ? 403 : null),
  },
  {
    // a key of the organization itself, in scope everywhere, that may do nothing
    name: "an organization key with no access",
    header: (k) => `Bearer ${k["noAccess"]}`,
    expect: () => 403,
  },
  {
    name: "a project key of the same project on an organization-level operation",
    header: (k) => `Bearer ${k["project"]}`,
    expect: (op) => (organizationLevel(op) ? 403 : null),
  },
  {
    name: "an environment key of the same environment on a project- or organization-level operation",
    header: (k) => `Bearer ${k["env"]}`,
    expect: (op) => (projectLevel(op) ? 403 : null),
  },
];

/** A member's session is judged like a key: the same statuses for the same mistakes. */
const SESSION_CREDENTIALS: Credential[] = [
  { name: "no session (an unknown session token)", session: "unknown", expect: () => 401 },
  { name: "an expired session", session: "expired", expect: () => 401 },
  { name: "a logged-out session", session: "loggedOut", expect: () => 401 },
  { name: "a removed member's session", session: "removed", expect: () => 401 },
  {
    name: "a session of another organization's admin",
    session: "otherOrg",
    expect: (op) => (op.params.length > 0 ? 404 : null),
  },
  {
    // a read grant on one environment: no write there, nothing at project or organization level
    name: "a session with a narrower grant (read on one environment)",
    session: "readEnv",
    expect: (op) => ((writes(op) && names(op, "env_id")) || projectLevel(op) ? 403 : null),
  },
  {
    name: "a session whose environment grant is another environment",
    session: "otherEnv",
    expect: (op) => (names(op, "env_id") || projectLevel(op) ? 403 : null),
  },
];
CREDENTIALS.push(...SESSION_CREDENTIALS);

const ERROR_CODE = { 401: "UNAUTHORIZED", 403: "FORBIDDEN_ACCESS", 404: "NOT_FOUND" } as const;
const ERROR_FIELDS = ["id", "error_code", "title", "message", "support_link", "additional_info"];

/**
 * Every row of every table of the test's own database (on PostgreSQL its schema: other suites' schemas share the
 * database) but the request log, which records the refused requests too, and the keys' and sessions' last use (a
 * key or session refused for its scope was still used; a session's is renewed once a minute, so a long run sees it).
 */
const withoutLastUse = (table: string, r: object) =>
  table === "api_keys"
    ? { ...r, last_used_at: null }
    : table === "sessions"
      ? { ...r, last_seen_at: null, idle_expires_at: null }
      : r;

async function snapshot(env: TestEnv): Promise<Record<string, string[]>> {
  const own =
    env.dialect === "postgres"
      ? (await sql<{ s: string }>`select current_schema() as s`.execute(env.store.db)).rows[0]?.s
      : undefined;
  const tables = (await env.store.db.introspection.getTables())
    .filter((t) => own === undefined || t.schema === own)
    .map((t) => t.name)
    .filter((n) => n !== "api_log");
  assert.ok(
    tables.includes("users") && tables.includes("api_keys"),
    `the test's own tables: ${tables.join(", ")}`,
  );
  const rows: Record<string, string[]> = {};
  for (const table of tables) {
    const { rows: all } = await sql`select * from ${sql.table(table)}`.execute(env.store.db);
    rows[table] = all.map((r) => JSON.stringify(withoutLastUse(table, r as object))).sort();
  }
  return rows;
}

describeEachDialect("wrong credentials on every /v2 operation", (env) => {
  const keys: Keys = {};
  const ids: Record<string, string> = {};
  const sessions: Record<string, { cookie: string; csrf: string }> = {};

  before(async () => {
    const { acme, globex, call } = env();
    const ok = async (key: string, method: Method, url: string, body?: unknown) => {
      const res = await call(key, method, url, body);
      assert.ok(res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
      return res.json;
    };
    const key = async (body: Record<string, unknown>) =>
      (await ok(acme.adminKey, "POST", "/v2/api-key", { name: "matrix", ...body })) as {
        id: string;
        secret: string;
      };
    await ok(acme.adminKey, "POST", "/v2/projects", { key: "other", name: "Other" });
    keys["otherProject"] = (await key({ object_type: "project", project_id: "other" })).secret;
    keys["project"] = (await key({ object_type: "project", project_id: acme.projectId })).secret;
    keys["otherEnv"] = (
      await key({ object_type: "env", project_id: acme.projectId, environment_id: acme.envs.development })
    ).secret;
    keys["env"] = (
      await key({ object_type: "env", project_id: acme.projectId, environment_id: acme.envs.production })
    ).secret;
    keys["readEnv"] = (
      await key({
        object_type: "env",
        project_id: acme.projectId,
        environment_id: acme.envs.production,
        access_level: "read",
      })
    ).secret;
    keys["readOrg"] = (await key({ object_type: "org", access_level: "read" })).secret;
    keys["noAccess"] = (await key({ object_type: "org", access_level: "no_access" })).secret;
    keys["otherOrg"] = globex.adminKey;
    const revoked = await key({ object_type: "org" });
    await ok(acme.adminKey, "DELETE", `/v2/api-key/${revoked.id}`);
    keys["revoked"] = revoked.secret;
    const rotated = await key({ object_type: "org" });
    await ok(acme.adminKey, "POST", `/v2/api-key/${rotated.id}/rotate-secret`);
    keys["rotatedAway"] = rotated.secret;

    // Sessions: members of acme with narrow grants, one of globex, and sessions that ended.
    const { store, app } = env();
    const envGrant = (environmentId: string) => ({
      organizationId: acme.id,
      level: "env" as const,
      access: "read" as const,
      projectId: acme.projectId,
      environmentId,
    });
    ids["member_id"] = await addMember(store, "owner@acme.test", [{ organizationId: acme.id }]);
    await addMember(store, "reader@acme.test", [envGrant(acme.envs.production)]);
    await addMember(store, "dev@acme.test", [envGrant(acme.envs.development)]);
    ids["globex_member"] = await addMember(store, "admin@globex.test", [{ organizationId: globex.id }]);
    const removed = await addMember(store, "removed@acme.test", [{ organizationId: acme.id }]);
    await addMember(store, "out@acme.test", [{ organizationId: acme.id }]);
    await addMember(store, "expired@acme.test", [{ organizationId: acme.id }]);
    sessions["readEnv"] = await login(app, "reader@acme.test");
    sessions["otherEnv"] = await login(app, "dev@acme.test");
    sessions["otherOrg"] = await login(app, "admin@globex.test");
    sessions["owner"] = await login(app, "owner@acme.test");
    sessions["unknown"] = { cookie: `gatehouse_session=ghs_${"A".repeat(43)}`, csrf: "x" };
    sessions["removed"] = await login(app, "removed@acme.test");
    await ok(acme.adminKey, "DELETE", `/v2/members/${removed}`);
    sessions["loggedOut"] = await login(app, "out@acme.test");
    const out = await app.inject({
      method: "POST",
      url: "/v2/auth/logout",
      headers: { cookie: sessions["loggedOut"].cookie, "x-csrf-token": sessions["loggedOut"].csrf },
    });
    assert.equal(out.statusCode, 204);
    sessions["expired"] = await login(app, "expired@acme.test");
    const expiredMember = await store.db
      .selectFrom("members")
      .select("id")
      .where("email", "=", "expired@acme.test")
      .executeTakeFirstOrThrow();
    await store.db
      .updateTable("sessions")
      .set({ expires_at: "2000-01-01T00:00:00.000+00:00" })
      .where("member_id", "=", expiredMember.id)
      .execute();

    // Objects the paths name: acme's, so that a wrong key would reach something real if it got through.
    const P = acme.projectId;
    const E = acme.envs.production;
    await ok(acme.adminKey, "POST", `/v2/schema/${P}/${E}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {} },
    });
    await ok(acme.adminKey, "POST", `/v2/facts/${P}/${E}/users`, { key: "alice" });
    await env().app.apiLog.flush(); // so that the history has an event to name
    const history = await ok(acme.adminKey, "GET", "/v2/history");
    Object.assign(ids, {
      org_id: acme.id,
      proj_id: P,
      env_id: E,
      api_key_id: acme.adminKeyId,
      event_id: history.data[0].id,
      user_id: "alice",
      tenant_id: "default",
      resource_id: "document",
      action_id: "read",
      log_id: crypto.randomUUID(),
      task_id: crypto.randomUUID(),
      invite_id: crypto.randomUUID(),
    });
  });

  test("every wrong credential gets its status and the error body, and nothing changes", async () => {
    const { app } = env();
    const before = await snapshot(env());
    assert.equal(before["organizations"]?.length, 2, "the snapshot reads the seeded database");
    const unexpected: string[] = [];
    let checked = 0;
    for (const op of operations) {
      const url = op.path.replace(/\{(\w+)\}/g, (_, p: string) => ids[p] ?? `missing-${p}`);
      for (const credential of CREDENTIALS) {
        const status = credential.expect(op);
        if (status === null) continue;
        const header = credential.header?.(keys);
        const session = credential.session === undefined ? undefined : sessions[credential.session];
        const res = await app.inject({
          method: op.method,
          url,
          query: op.query,
          headers: session
            ? { cookie: session.cookie, "x-csrf-token": session.csrf, origin: PUBLIC_URL }
            : header === undefined
              ? {}
              : { authorization: header },
          ...(op.body !== undefined && { payload: op.body as InjectOptions["payload"] }),
        });
        checked++;
        const where = `${credential.name}: ${op.method} ${op.path}`;
        if (res.statusCode !== status) {
          unexpected.push(`${where} -> ${res.statusCode}, expected ${status}: ${res.body.slice(0, 200)}`);
          continue;
        }
        const body = res.json();
        assert.equal(body.error_code, ERROR_CODE[status], where);
        for (const field of ["id", "title", "message", "support_link"])
          assert.ok(typeof body[field] === "string" && body[field].length > 0, `${where}: ${field}`);
        assert.deepEqual(
          Object.keys(body).filter((k) => !ERROR_FIELDS.includes(k)),
          [],
          `${where}: fields outside the error shape`,
        );
      }
    }
    assert.deepEqual(unexpected, []);
    // every operation was tried with at least the five keys that are no keys
    assert.ok(checked >= operations.length * 5);
    assert.deepEqual(await snapshot(env()), before, "a refused request changed the database");
  });

  test("members of other organizations: an admin reaches none of them and learns nothing of them", async () => {
    const { app, acme, globex } = env();
    const other = ids["globex_member"]!;
    const asAcme = acme.id;
    const grant = [{ organization_id: asAcme, object_type: "org", access_level: "admin" }];
    const owner = sessions["owner"]!;
    const attempts: { method: Method; url: string; body?: unknown; expect: number }[] = [
      { method: "GET", url: `/v2/members/${other}`, expect: 404 },
      { method: "PATCH", url: `/v2/members/${other}`, body: { settings: { x: 1 } }, expect: 404 },
      { method: "DELETE", url: `/v2/members/${other}`, expect: 404 },
      { method: "DELETE", url: "/v2/members", body: { id: other, permissions: grant }, expect: 404 },
      { method: "POST", url: "/v2/members", body: { id: other, permissions: grant }, expect: 404 },
      { method: "GET", url: `/v2/orgs/${globex.id}/invites`, expect: 404 },
    ];
    const before = await snapshot(env());
    const unexpected: string[] = [];
    for (const credential of ["key", "session"] as const) {
      for (const a of attempts) {
        const res = await app.inject({
          method: a.method,
          url: a.url,
          headers:
            credential === "key"
              ? { authorization: `Bearer ${acme.adminKey}` }
              : { cookie: owner.cookie, "x-csrf-token": owner.csrf, origin: PUBLIC_URL },
          ...(a.body !== undefined && { payload: a.body as InjectOptions["payload"] }),
        });
        if (res.statusCode !== a.expect || res.body.includes("globex"))
          unexpected.push(
            `${credential}: ${a.method} ${a.url} -> ${res.statusCode} ${res.body.slice(0, 200)}`,
          );
      }
      const listed = await app.inject({
        url: "/v2/members?per_page=100",
        headers:
          credential === "key"
            ? { authorization: `Bearer ${acme.adminKey}` }
            : { cookie: owner.cookie, origin: PUBLIC_URL },
      });
      assert.equal(listed.statusCode, 200);
      assert.ok(!listed.body.includes(other) && !listed.body.includes("globex"), listed.body.slice(0, 300));
    }
    assert.deepEqual(unexpected, []);
    assert.deepEqual(await snapshot(env()), before, "a refused request changed the database");

    // By e-mail it is an invitation, whoever the address belongs to: nothing of the person is shown.
    const invited = await app.inject({
      method: "POST",
      url: "/v2/members",
      headers: { authorization: `Bearer ${acme.adminKey}` },
      payload: { email: "admin@globex.test", permissions: grant },
    });
    assert.equal(invited.statusCode, 202, invited.body);
    assert.ok(!invited.body.includes(other), "the member's id is not told");
    for (const field of ["last_login", "last_ip", "logins_count", "name"])
      assert.ok(!(field in invited.json()), field);
    const after = await snapshot(env());
    assert.deepEqual(after["member_grants"], before["member_grants"], "no grant was given without consent");
  });

  test("the matrix covers every /v2 operation of the document", () => {
    assert.ok(operations.length > 100, `only ${operations.length} operations read from docs/openapi.json`);
    for (const entry of [...ORGANIZATION_LEVEL, ...PROJECT_LEVEL]) {
      const [method, path] = entry.split(" ");
      assert.ok(
        operations.some((op) => op.method === method && op.path === path),
        `${entry} is not in the document`,
      );
    }
  });

  test("an SSO-only organization: password logins and password sessions are refused and change nothing, but for the break-glass admin", async () => {
    const { app, globex, call, store } = env();
    await addMember(store, "staff@globex.test", [{ organizationId: globex.id, access: "write" }]);
    const opened = await login(app, "staff@globex.test");
    const saved = await call(globex.adminKey, "PUT", "/v2/orgs/globex/login-settings", {
      require_two_factor: false,
      sso: {
        provider_name: "Globex ID",
        issuer: "https://id.globex.test",
        client_id: "gatehouse",
        client_secret: "client-secret",
        allowed_domains: ["globex.test"],
        new_member_access: "read",
        require_sso: true,
        break_glass_email: "admin@globex.test",
      },
    });
    assert.equal(saved.status, 200, saved.body);
    const before = await snapshot(env());
    const unexpected: string[] = [];
    const refused = await anonymous(app, "POST", "/v2/auth/login", {
      email: "staff@globex.test",
      password: PASSWORD,
    });
    if (refused.status !== 403 || refused.json.error_code !== "SSO_REQUIRED")
      unexpected.push(`password login -> ${refused.status} ${refused.body}`);
    // a wrong password is told as any wrong password: the answer says nothing of SSO
    const wrong = await anonymous(app, "POST", "/v2/auth/login", {
      email: "staff@globex.test",
      password: "wrong password!!",
    });
    if (wrong.json.error_code !== "INVALID_CREDENTIALS") unexpected.push(`wrong password -> ${wrong.body}`);
    // the session opened with a password before SSO was required reaches nothing but its own session routes
    for (const op of operations.filter(
      (o) => !o.path.startsWith("/v2/auth/") && !o.path.startsWith("/v2/members/me"),
    )) {
      const url = op.path.replace(/\{(\w+)\}/g, (_, p: string) => ids[p] ?? `missing-${p}`);
      const res = await app.inject({
        method: op.method,
        url,
        query: op.query,
        headers: { cookie: opened.cookie, "x-csrf-token": opened.csrf, origin: PUBLIC_URL },
        ...(op.body !== undefined && { payload: op.body as InjectOptions["payload"] }),
      });
      if (res.statusCode !== 403 || res.json().error_code !== "SSO_REQUIRED")
        unexpected.push(`${op.method} ${op.path} -> ${res.statusCode} ${res.body.slice(0, 160)}`);
    }
    assert.deepEqual(unexpected, []);
    const after = await snapshot(env());
    // failed logins write nothing; only the refused login's counters live in the rate limiter, not the database
    assert.deepEqual(after, before, "a refused request changed the database");
    const breakGlass = await login(app, "admin@globex.test");
    const projects = await app.inject({ url: "/v2/projects", headers: { cookie: breakGlass.cookie } });
    assert.equal(projects.statusCode, 200, projects.body);
  });
});
