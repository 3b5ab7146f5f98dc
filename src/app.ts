import { EventEmitter } from "node:events";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import fastJson from "fast-json-stringify";
import { Ajv, type Options as AjvOptions, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { Kysely } from "kysely";
import { Type } from "typebox";
import type { Config } from "./config.ts";
import type { Dialect, Store } from "./db/store.ts";
import { openSqliteThread } from "./db/sqlite-thread.ts";
import type { Database } from "./db/types.ts";
import type { DatabaseOutage } from "./db/outage.ts";
import { ERROR_CODES } from "./lib/errors.ts";
import { ErrorBodySchema } from "./lib/schemas.ts";
import { errorsPage } from "./lib/errors-page.ts";
import type { SecretBox } from "./lib/secrets.ts";
import { ChangeNotifier } from "./changes/feed.ts";
import { authPlugin } from "./plugins/auth.ts";
import { regionPlugin } from "./plugins/region.ts";
import { clientErrorHandler, errorsPlugin } from "./http/errors.ts";
import { securityHeadersPlugin } from "./plugins/security-headers.ts";
import { jsonBodyPlugin } from "./http/json-body.ts";
import { DebugRequestLogs } from "./http/logging.ts";
import { nullsAsOmitted } from "./http/nulls-as-omitted.ts";
import { revisionsPlugin } from "./plugins/revisions.ts";
import { apiLogPlugin } from "./plugins/api-log.ts";
import { rateLimitPlugin } from "./plugins/rate-limit.ts";
import { dashboardBuilt, dashboardPage, dashboardPlugin } from "./plugins/dashboard.ts";
import { metricsPlugin } from "./plugins/metrics.ts";
import { countOpenTasks } from "./tasks/tasks.repo.ts";
import { now } from "./lib/time.ts";
import { organizationRateLimit } from "./domain/organization-records.ts";
import { createKeyUseRecorder, type KeyUseRecorder } from "./domain/api-key-records.ts";
import { organizationsRoutes } from "./modules/organizations/organizations.routes.ts";
import { projectsRoutes } from "./modules/projects/projects.routes.ts";
import { environmentsRoutes } from "./modules/environments/environments.routes.ts";
import { apiKeysRoutes } from "./modules/api-keys/api-keys.routes.ts";
import { apiLogRoutes } from "./modules/api-log/api-log.routes.ts";
import { tasksPlugin } from "./tasks/tasks.plugin.ts";
import { environmentCopyRoutes } from "./modules/environment-copy/environment-copy.routes.ts";
import { policyRoutes } from "./modules/policy/policy.routes.ts";
import { decisionLogRoutes } from "./modules/decision-log/decision-log.routes.ts";
import { pdpSyncRoutes } from "./modules/pdp-sync/pdp-sync.routes.ts";
import { usersRoutes } from "./modules/users/users.routes.ts";
import { tenantsRoutes } from "./modules/tenants/tenants.routes.ts";
import { roleAssignmentsRoutes } from "./modules/role-assignments/role-assignments.routes.ts";
import { resourceInstancesRoutes } from "./modules/resource-instances/resource-instances.routes.ts";
import { relationshipTuplesRoutes } from "./modules/relationship-tuples/relationship-tuples.routes.ts";
import { setRulesRoutes } from "./modules/set-rules/set-rules.routes.ts";
import { bulkRoutes } from "./modules/bulk/bulk.routes.ts";
import { resourcesRoutes } from "./modules/resources/resources.routes.ts";
import { resourceActionsRoutes } from "./modules/resource-actions/resource-actions.routes.ts";
import { actionGroupsRoutes } from "./modules/action-groups/action-groups.routes.ts";
import { resourceAttributesRoutes } from "./modules/resource-attributes/resource-attributes.routes.ts";
import { resourceRolesRoutes } from "./modules/resource-roles/resource-roles.routes.ts";
import { relationsRoutes } from "./modules/relations/relations.routes.ts";
import { rolesRoutes } from "./modules/roles/roles.routes.ts";
import { conditionSetsRoutes } from "./modules/condition-sets/condition-sets.routes.ts";
import { proxyConfigsRoutes } from "./modules/proxy-configs/proxy-configs.routes.ts";
import { membersRoutes } from "./modules/members/members.routes.ts";
import { sessionsRoutes } from "./modules/sessions/sessions.routes.ts";
import { ssoRoutes } from "./modules/sessions/sso.routes.ts";
import { twoFactorRoutes } from "./modules/sessions/two-factor.routes.ts";
import { loginSettingsRoutes } from "./modules/login-settings/login-settings.routes.ts";
import { decisionsRoutes } from "./modules/decisions/decisions.routes.ts";
import { webhooksRoutes } from "./modules/webhooks/webhooks.routes.ts";
import { changeStreamRoutes } from "./modules/change-stream/change-stream.routes.ts";
import type { PdpSlot } from "./pdp/decision-port.ts";
import { noLogExport, type LogExport } from "./domain/log-export/log-export.ts";
import { tracingPlugin } from "./http/tracing.ts";
import { negotiate } from "@fastify/accept-negotiator";

/** The settings the control plane reads; `loadConfig` (src/config.ts) gives each its value or default. */
export type AppConfig = Pick<
  Config,
  | "publicUrl"
  | "bodyLimitBytes"
  | "rateLimitPerMinute"
  | "redisUrl"
  | "apiLog"
  | "apiLogMaxBodyBytes"
  | "apiLogFlushMs"
  | "apiLogRetentionDays"
  | "taskRetentionDays"
  | "taskLeaseSeconds"
  | "decisionLogRetentionDays"
  | "changeRetentionDays"
  | "changeRetentionRevisions"
  | "sessionIdleMinutes"
  | "sessionMaxHours"
  | "inviteExpiryDays"
  | "smtpUrl"
  | "smtpFrom"
  | "loginFailuresPerAccount"
  | "loginFailuresPerAddress"
  | "region"
  | "regionUrls"
  | "regionSecret"
  | "webhookAllowPrivateUrls"
  | "webhookTimeoutMs"
  | "webhookRetryBaseMs"
  | "webhookRetrySeconds"
>;

export interface AppDeps {
  config: AppConfig;
  store: Store;
  box: SecretBox;
  /** Tests pass nothing (no log); the server passes pino options. */
  logger?: FastifyServerOptions["logger"];
  /** Milliseconds since the epoch for rate-limit windows; Date.now when left out. */
  clock?: () => number;
  /** The built dashboard (web/dist); served at `/` when it holds an index.html. */
  dashboardDir?: string;
  /** Where the API log and decision log are exported (none when left out). */
  logExport?: LogExport;
}

/**
 * What the control plane announces to those built after it: the embedded PDP drops cached key lookups when keys
 * are revoked or rotated, and its copy of an environment when the environment goes away.
 */
export type AppEvents = EventEmitter<{ keysChanged: []; environmentDeleted: [environmentId: string] }>;

/** What the app shares with its modules; each module's plugin declares the part it uses. */
export interface ModuleDeps {
  config: AppConfig;
  store: Store;
  db: Kysely<Database>;
  /** Where paged lists and their counts are read, outside any transaction (see listReader). */
  readDb: Kysely<Database>;
  dialect: Dialect;
  outage: DatabaseOutage;
  box: SecretBox;
  notifier: ChangeNotifier;
  onKeysChanged(): void;
  onEnvironmentDeleted(environmentId: string): void;
  pdpSlot: PdpSlot;
  logExport: LogExport;
}

/** The modules in the order their routes appear in the OpenAPI document; `tasks` comes before its task types. */
const MODULES: FastifyPluginAsyncTypebox<ModuleDeps>[] = [
  organizationsRoutes,
  projectsRoutes,
  environmentsRoutes,
  apiKeysRoutes,
  apiLogRoutes,
  tasksPlugin,
  environmentCopyRoutes,
  decisionLogRoutes,
  decisionsRoutes,
  pdpSyncRoutes,
  changeStreamRoutes,
  usersRoutes,
  tenantsRoutes,
  roleAssignmentsRoutes,
  resourceInstancesRoutes,
  relationshipTuplesRoutes,
  setRulesRoutes,
  bulkRoutes,
  proxyConfigsRoutes,
  resourcesRoutes,
  resourceActionsRoutes,
  actionGroupsRoutes,
  resourceAttributesRoutes,
  resourceRolesRoutes,
  relationsRoutes,
  rolesRoutes,
  conditionSetsRoutes,
  policyRoutes,
  membersRoutes,
  sessionsRoutes,
  ssoRoutes,
  twoFactorRoutes,
  loginSettingsRoutes,
  webhooksRoutes,
];

export const OPENAPI_INFO = {
  title: "Gatehouse API",
  version: "2.0.0",
  description:
    "Self-hosted authorization management: organizations, projects, environments, API keys, facts and schema. " +
    "Every /v2 request needs `Authorization: Bearer <API key>` or a member's session cookie (POST /v2/auth/login; " +
    "a session's writes also send its CSRF token as `X-CSRF-Token`); the scheme's case does not matter. In a " +
    "request body, `null` for an optional field is the same as leaving it out, unless the field's schema admits " +
    "null (then null clears it).",
};

/**
 * Where the lists are read. On a SQLite file, a read-only connection on a thread of its own: better-sqlite3 holds
 * the event loop for a whole statement, and a searched, filtered or deep page of a large list (and its count) can
 * read every row of the environment, while health checks, PDP checks and every other request wait. Under WAL it
 * sees every committed write. On PostgreSQL (and an in-memory SQLite database, which no other connection can
 * open), the store's own connections.
 */
function listReader(store: Store): Kysely<Database> {
  if (store.sqliteFile === undefined) return store.db;
  return openSqliteThread(store.sqliteFile, ["query_only = ON", "busy_timeout = 5000"], "list reader");
}

/**
 * On a SQLite file, the API log's inserts and purges run on a connection of their own, on a thread of its own, so
 * that no batch of records is written on the event loop. Its commits do not wait for the disk (`synchronous =
 * NORMAL` under WAL, as the decision log's): a power failure may cost the last records, never an API write.
 */
const apiLogWriter = (file: string): Kysely<Database> =>
  openSqliteThread(file, ["synchronous = NORMAL", "busy_timeout = 10000"], "API log writer");

/** Builds the whole control plane as a Fastify instance that is ready but not listening. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, store, box } = deps;
  const logExport = deps.logExport ?? noLogExport;
  const app = createFastify(deps);
  const notifier = new ChangeNotifier();
  const events: AppEvents = new EventEmitter();
  app.decorate("notifier", notifier);
  app.decorate("events", events);
  app.decorate("starting", false);
  const pdpSlot: PdpSlot = { current: undefined };
  app.decorate("pdpSlot", pdpSlot);

  await app.register(tracingPlugin);
  await app.register(jsonBodyPlugin, { bodyLimitBytes: config.bodyLimitBytes });
  app.addSchema(ErrorBodySchema);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: OPENAPI_INFO,
      components: {
        securitySchemes: {
          bearer: { type: "http", scheme: "bearer" },
          session: { type: "apiKey", in: "cookie", name: "gatehouse_session" },
        },
      },
      security: [{ bearer: [] }, { session: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(securityHeadersPlugin);
  await app.register(swaggerUi, { routePrefix: "/docs" });
  const dashboardDir = deps.dashboardDir && dashboardBuilt(deps.dashboardDir) ? deps.dashboardDir : undefined;
  await app.register(errorsPlugin, {
    publicUrl: config.publicUrl,
    outage: store.outage,
    fallback: dashboardDir ? dashboardPage : undefined,
  });
  if (dashboardDir) await app.register(dashboardPlugin, { dir: dashboardDir });
  await app.register(apiLogPlugin, {
    db: store.db,
    ...(store.sqliteFile !== undefined && { writeDb: apiLogWriter(store.sqliteFile) }),
    enabled: config.apiLog !== "off",
    maxBodyBytes: config.apiLogMaxBodyBytes,
    flushIntervalMs: config.apiLogFlushMs,
    retentionDays: config.apiLogRetentionDays,
    outage: store.outage,
    ...(logExport.enabled && { exported: logExport.apiCalls }),
  });
  await app.register(metricsPlugin, {
    pool: () => store.poolStats(),
    apiLog: () => app.apiLog.stats(),
    tasks: () => countOpenTasks(store.db, now()),
    logExport: logExport.stats,
  });
  await app.register(regionPlugin, config);
  await app.register(authPlugin, {
    db: store.db,
    publicUrl: config.publicUrl,
    session: { idleMs: config.sessionIdleMinutes * 60_000, maxMs: config.sessionMaxHours * 3_600_000 },
  });
  // Keys' last use: noted once the call is answered, written in batches, at most once a minute per key.
  const keyUse = createKeyUseRecorder(store.db, {
    ...(deps.clock && { clock: deps.clock }),
    onError: (err) => {
      if (!store.outage.report(err, app.log)) app.log.warn({ err }, "could not record API keys' last use");
    },
  });
  app.decorate("keyUse", keyUse);
  app.addHook("onResponse", async (request) => {
    const principal = request.principal;
    if (principal && !principal.member) keyUse.used(principal.keyId);
  });
  app.addHook("onClose", () => keyUse.close());
  await app.register(rateLimitPlugin, {
    defaultLimit: config.rateLimitPerMinute,
    limitOf: (organizationId) => organizationRateLimit(store.db, organizationId),
    redisUrl: config.redisUrl,
    ...(deps.clock && { clock: deps.clock }),
  });
  await app.register(revisionsPlugin, { notifier });

  const readDb = listReader(store);
  if (readDb !== store.db) app.addHook("onClose", () => readDb.destroy());
  const shared: ModuleDeps = {
    config,
    store,
    db: store.db,
    readDb,
    dialect: store.dialect,
    outage: store.outage,
    box,
    notifier,
    onKeysChanged: () => events.emit("keysChanged"),
    onEnvironmentDeleted: (environmentId) => events.emit("environmentDeleted", environmentId),
    pdpSlot,
    logExport,
  };
  for (const module of MODULES) await app.register(module, shared);
  await app.register(opsRoutes, { store });
  return app;
}

/** Fastify with the validators and serializers every route shares. */
function createFastify(deps: AppDeps) {
  const app = Fastify({
    logger: deps.logger ?? false,
    logController: new DebugRequestLogs(),
    bodyLimit: deps.config.bodyLimitBytes,
    clientErrorHandler: clientErrorHandler(deps.config.publicUrl),
    // Request ids go into every log line, so an "unexpected error" body can be matched with its log entry.
    genReqId: () => crypto.randomUUID(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Query strings and paths are text, so they are coerced ("5" -> 5, a repeated key -> array); JSON bodies are
  // not: {"key": 42} is a type error, not the string "42".
  const makeAjv = (options: AjvOptions) => {
    const ajv = new Ajv({
      useDefaults: true,
      removeAdditional: false,
      allErrors: false,
      strict: false,
      ...options,
    });
    addFormats.default(ajv);
    return ajv;
  };
  const textAjv = makeAjv({ coerceTypes: "array" });
  const jsonAjv = makeAjv({ coerceTypes: false });
  // Error bodies come from one handler in one shape: compiling a serializer for every route and error status
  // cost seconds at start. Success bodies keep compiled serializers, which also drop fields a schema does not list.
  // Each route's serializer and validators are compiled when the route is first used, not at start: compiling
  // all of them took most of a start (about 0.7 s of 1.5 s), for routes a deployment may never call.
  app.setSerializerCompiler(({ schema, httpStatus }) => {
    if (Number(httpStatus) >= 400) return (data) => JSON.stringify(data);
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => (serialize ??= fastJson(schema as object))(data);
  });
  // A body's null for an optional field reads as if the field were left out (see nulls-as-omitted.ts).
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === "body"
      ? lazyValidator(
          () => jsonAjv.compile(schema as object),
          () => nullsAsOmitted(schema as Record<string, unknown>),
        )
      : lazyValidator(() => textAjv.compile(schema as object)),
  );
  return app;
}

/**
 * A validator compiled on its first call; like Ajv's, it leaves the last call's errors on `errors`. `before`
 * makes a step that adjusts the data before each validation (also on the first call).
 */
function lazyValidator(
  compile: () => ValidateFunction,
  before?: () => ((data: unknown) => void) | undefined,
) {
  let compiled: ValidateFunction | undefined;
  let prepare: ((data: unknown) => void) | undefined;
  const validate = (data: unknown) => {
    if (compiled === undefined) {
      compiled = compile();
      prepare = before?.();
    }
    prepare?.(data);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null as ValidateFunction["errors"];
  return validate;
}

/** Health, readiness, the OpenAPI document and the error table: for operators, not in the document. */
const opsRoutes: FastifyPluginAsyncTypebox<{ store: Store }> = async (app, { store }) => {
  const hidden = { hide: true };
  app.get(
    "/healthz",
    { schema: { ...hidden, response: { 200: Type.Object({ status: Type.String() }) } } },
    async () => ({ status: "ok" }),
  );
  app.get("/readyz", { schema: hidden }, async (_req, reply) => {
    // The server binds its ports before the first start's bootstrap; it is ready once that is done.
    if (app.starting) return reply.code(503).send({ status: "starting" });
    const ok = await store.ping();
    return reply.code(ok ? 200 : 503).send({ status: ok ? "ready" : "database unavailable" });
  });
  app.get("/openapi.json", { schema: hidden }, async () => app.swagger());
  // A page for browsers (support links point to /errors#CODE), the list as JSON for everyone else.
  const page = errorsPage();
  app.get("/errors", { schema: hidden }, async (request, reply) => {
    if (prefersHtml(request.headers.accept)) return reply.type("text/html; charset=utf-8").send(page);
    return Object.entries(ERROR_CODES).map(([code, { status, title, help }]) => ({
      error_code: code,
      status,
      title,
      help,
    }));
  });
};

/** Whether an Accept header ranks text/html above JSON (a browser's does; curl's and clients' do not; a tie is JSON). */
const prefersHtml = (accept: string | undefined): boolean =>
  negotiate(accept ?? "", ["application/json", "text/html"]) === "text/html";

declare module "fastify" {
  interface FastifyInstance {
    notifier: ChangeNotifier;
    events: AppEvents;
    /** True while the server finishes starting after binding its port (readiness answers 503). */
    starting: boolean;
    /** The embedded PDP once it is built over this app (none with --pdp-port 0): the control plane's checks. */
    pdpSlot: PdpSlot;
    /** Keys' last use; the embedded PDP notes the keys of its checks here too. */
    keyUse: KeyUseRecorder;
  }
}
