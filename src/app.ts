import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import fastJson from "fast-json-stringify";
import { Ajv, type Options as AjvOptions } from "ajv";
import addFormats from "ajv-formats";
import { Type } from "typebox";
import type { Store } from "./db/store.ts";
import { ERROR_CODES } from "./lib/errors.ts";
import { ErrorBodySchema } from "./lib/schemas.ts";
import type { SecretBox } from "./lib/secrets.ts";
import { ChangeNotifier } from "./changes/feed.ts";
import { authPlugin } from "./plugins/auth.ts";
import { errorsPlugin } from "./plugins/errors.ts";
import { jsonBodyPlugin } from "./plugins/json-body.ts";
import { revisionsPlugin } from "./plugins/revisions.ts";
import { apiLogPlugin } from "./plugins/api-log.ts";
import { rateLimitPlugin } from "./plugins/rate-limit.ts";
import { createScopeService } from "./domain/path-scope.ts";
import { createAuditLogsService } from "./modules/audit-logs/audit-logs.service.ts";
import { openSqliteDecisionLogReader } from "./modules/audit-logs/sqlite-decision-log.ts";
import { auditLogsRoutes } from "./modules/audit-logs/audit-logs.routes.ts";
import { purgeDecisionLogsOlderThan } from "./modules/audit-logs/audit-logs.service.ts";
import { schedulePeriodic } from "./lib/periodic.ts";
import { createPdpSyncService } from "./modules/pdp-sync/pdp-sync.service.ts";
import { pdpSyncRoutes } from "./modules/pdp-sync/pdp-sync.routes.ts";
import {
  createOrganizationsService,
  organizationRateLimit,
} from "./modules/organizations/organizations.service.ts";
import { organizationsRoutes } from "./modules/organizations/organizations.routes.ts";
import { createProjectsService } from "./modules/projects/projects.service.ts";
import { projectsRoutes } from "./modules/projects/projects.routes.ts";
import { createEnvironmentsService } from "./modules/environments/environments.service.ts";
import { environmentsRoutes } from "./modules/environments/environments.routes.ts";
import { createApiKeysService } from "./modules/api-keys/api-keys.service.ts";
import { apiKeysRoutes } from "./modules/api-keys/api-keys.routes.ts";
import { createHistoryService } from "./modules/history/history.service.ts";
import { historyRoutes } from "./modules/history/history.routes.ts";
import { createTasksService, type TasksService } from "./tasks/tasks.service.ts";
import { createTaskRunner, type TaskRunner } from "./tasks/task-runner.ts";
import { createEnvironmentCopyService } from "./modules/environment-copy/environment-copy.service.ts";
import { environmentCopyRoutes } from "./modules/environment-copy/environment-copy.routes.ts";
import { createUsersService } from "./modules/users/users.service.ts";
import { usersRoutes } from "./modules/users/users.routes.ts";
import { createTenantsService } from "./modules/tenants/tenants.service.ts";
import { tenantsRoutes } from "./modules/tenants/tenants.routes.ts";
import {
  createRoleAssignmentsService,
  purgeExpiredAssignments,
} from "./modules/role-assignments/role-assignments.service.ts";
import { roleAssignmentsRoutes } from "./modules/role-assignments/role-assignments.routes.ts";
import { createResourceInstancesService } from "./modules/resource-instances/resource-instances.service.ts";
import { resourceInstancesRoutes } from "./modules/resource-instances/resource-instances.routes.ts";
import { createRelationshipTuplesService } from "./modules/relationship-tuples/relationship-tuples.service.ts";
import { relationshipTuplesRoutes } from "./modules/relationship-tuples/relationship-tuples.routes.ts";
import { createSetRulesService } from "./modules/set-rules/set-rules.service.ts";
import { setRulesRoutes } from "./modules/set-rules/set-rules.routes.ts";
import { createBulkService } from "./modules/bulk/bulk.service.ts";
import { bulkRoutes } from "./modules/bulk/bulk.routes.ts";
import { createResourcesService } from "./modules/resources/resources.service.ts";
import { resourcesRoutes } from "./modules/resources/resources.routes.ts";
import { createResourceActionsService } from "./modules/resource-actions/resource-actions.service.ts";
import { resourceActionsRoutes } from "./modules/resource-actions/resource-actions.routes.ts";
import { createActionGroupsService } from "./modules/action-groups/action-groups.service.ts";
import { actionGroupsRoutes } from "./modules/action-groups/action-groups.routes.ts";
import { createResourceAttributesService } from "./modules/resource-attributes/resource-attributes.service.ts";
import { resourceAttributesRoutes } from "./modules/resource-attributes/resource-attributes.routes.ts";
import { createResourceRolesService } from "./modules/resource-roles/resource-roles.service.ts";
import { resourceRolesRoutes } from "./modules/resource-roles/resource-roles.routes.ts";
import { createRelationsService } from "./modules/relations/relations.service.ts";
import { relationsRoutes } from "./modules/relations/relations.routes.ts";
import { createRolesService } from "./modules/roles/roles.service.ts";
import { rolesRoutes } from "./modules/roles/roles.routes.ts";
import { createConditionSetsService } from "./modules/condition-sets/condition-sets.service.ts";
import { conditionSetsRoutes } from "./modules/condition-sets/condition-sets.routes.ts";

export interface AppConfig {
  publicUrl: string;
  bodyLimitBytes: number;
  logLevel: string;
  /** Defaults as in src/config.ts when left out. */
  rateLimitPerMinute?: number;
  redisUrl?: string | undefined;
  apiLog?: string;
  apiLogMaxBodyBytes?: number;
  apiLogFlushMs?: number;
  apiLogRetentionDays?: number;
  taskRetentionDays?: number;
  taskLeaseSeconds?: number;
  decisionLogRetentionDays?: number;
}

export interface AppDeps {
  config: AppConfig;
  store: Store;
  box: SecretBox;
  notifier?: ChangeNotifier;
  /** Told when keys are revoked or rotated and when environments go away (the embedded PDP drops its caches). */
  hooks?: { onKeysChanged?: () => void; onEnvironmentDeleted?: (environmentId: string) => void };
  /** Tests pass `false`; the server passes pino options. */
  logger?: FastifyServerOptions["logger"];
  /** Milliseconds since the epoch for rate-limit windows; Date.now when left out. */
  clock?: () => number;
}

export const OPENAPI_INFO = {
  title: "Gatehouse API",
  version: "2.0.0",
  description:
    "Self-hosted authorization management: organizations, projects, environments, API keys, facts and schema. " +
    "Every /v2 request needs `Authorization: Bearer <API key>`.",
};

/** Builds the whole control plane as a Fastify instance that is ready but not listening. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, store, box } = deps;
  const notifier = deps.notifier ?? new ChangeNotifier();
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.bodyLimitBytes,
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
  app.setSerializerCompiler(({ schema, httpStatus }) =>
    Number(httpStatus) >= 400 ? (data) => JSON.stringify(data) : fastJson(schema as object),
  );
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? jsonAjv : textAjv).compile(schema as object),
  );

  await app.register(jsonBodyPlugin, { bodyLimitBytes: config.bodyLimitBytes });

  app.addSchema(ErrorBodySchema);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: OPENAPI_INFO,
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  await app.register(errorsPlugin, { publicUrl: config.publicUrl, outage: store.outage });
  await app.register(apiLogPlugin, {
    db: store.db,
    enabled: config.apiLog !== "off",
    maxBodyBytes: config.apiLogMaxBodyBytes ?? 65_536,
    flushIntervalMs: config.apiLogFlushMs ?? 100,
    retentionDays: config.apiLogRetentionDays ?? 30,
    outage: store.outage,
  });
  await app.register(authPlugin, { db: store.db });
  await app.register(rateLimitPlugin, {
    defaultLimit: config.rateLimitPerMinute ?? 1000,
    limitOf: (organizationId) => organizationRateLimit(store.db, organizationId),
    redisUrl: config.redisUrl,
    ...(deps.clock && { clock: deps.clock }),
  });
  await app.register(revisionsPlugin, { notifier });

  const scope = createScopeService(store.db);
  const organizations = createOrganizationsService({
    db: store.db,
    box,
    onSettingsChanged: (organizationId) => app.rateLimits.forget(organizationId),
  });
  const hooks = deps.hooks ?? {};
  const projects = createProjectsService({
    db: store.db,
    box,
    scope,
    ...(hooks.onEnvironmentDeleted && { onEnvironmentDeleted: hooks.onEnvironmentDeleted }),
  });
  const environments = createEnvironmentsService({
    db: store.db,
    box,
    scope,
    ...(hooks.onEnvironmentDeleted && { onDeleted: hooks.onEnvironmentDeleted }),
  });
  const apiKeys = createApiKeysService({
    db: store.db,
    box,
    scope,
    ...(hooks.onKeysChanged && { onKeysChanged: hooks.onKeysChanged }),
  });
  const history = createHistoryService({ db: store.db });

  await app.register(organizationsRoutes, { organizations });
  await app.register(projectsRoutes, { projects });
  await app.register(environmentsRoutes, { environments });
  await app.register(apiKeysRoutes, { apiKeys });
  await app.register(historyRoutes, { history });

  // Background tasks: the worker is created here and started by the server (tests start it themselves).
  const tasks = createTasksService({ db: store.db, dialect: store.dialect, publicUrl: config.publicUrl });
  const environmentCopy = createEnvironmentCopyService({
    db: store.db,
    dialect: store.dialect,
    box,
    scope,
    tasks,
  });
  tasks.registry.register("environment_copy", environmentCopy.handler);
  const taskRunner = createTaskRunner(tasks, {
    retentionDays: config.taskRetentionDays ?? 7,
    leaseMs: (config.taskLeaseSeconds ?? 30) * 1000,
    notifier,
    log: app.log,
    outage: store.outage,
  });
  await app.register(environmentCopyRoutes, { environmentCopy });
  app.addHook("preClose", async () => tasks.close());
  app.addHook("onClose", () => taskRunner.stop());
  app.decorate("tasks", tasks);
  app.decorate("taskRunner", taskRunner);
  const decisionLogReader =
    store.sqliteFile === undefined ? undefined : openSqliteDecisionLogReader(store.sqliteFile);
  if (decisionLogReader) app.addHook("onClose", () => decisionLogReader.destroy());
  await app.register(auditLogsRoutes, {
    auditLogs: createAuditLogsService({
      db: store.db,
      readDb: decisionLogReader ?? store.db,
      dialect: store.dialect,
      scope,
    }),
  });
  schedulePeriodic(
    app,
    "decision log purge",
    3_600_000,
    () => purgeDecisionLogsOlderThan(store.db, config.decisionLogRetentionDays ?? 30),
    store.outage,
  );
  await app.register(pdpSyncRoutes, { pdpSync: createPdpSyncService({ store, scope, notifier }) });

  const facts = { db: store.db, scope };
  await app.register(usersRoutes, { users: createUsersService(facts) });
  await app.register(tenantsRoutes, { tenants: createTenantsService(facts) });
  await app.register(roleAssignmentsRoutes, { roleAssignments: createRoleAssignmentsService(facts) });
  // PDPs stop granting at an assignment's expiry on their own; this deletes the rows and tells every PDP.
  schedulePeriodic(app, "expired role assignment purge", 60_000, () =>
    purgeExpiredAssignments({ db: store.db, notifier }),
  );
  await app.register(resourceInstancesRoutes, { instances: createResourceInstancesService(facts) });
  await app.register(relationshipTuplesRoutes, { tuples: createRelationshipTuplesService(facts) });
  await app.register(setRulesRoutes, { setRules: createSetRulesService(facts) });
  await app.register(bulkRoutes, { bulk: createBulkService(facts) });

  const schema = { db: store.db, scope };
  await app.register(resourcesRoutes, { resources: createResourcesService(schema) });
  await app.register(resourceActionsRoutes, { actions: createResourceActionsService(schema) });
  await app.register(actionGroupsRoutes, { actionGroups: createActionGroupsService(schema) });
  await app.register(resourceAttributesRoutes, { attributes: createResourceAttributesService(schema) });
  await app.register(resourceRolesRoutes, { resourceRoles: createResourceRolesService(schema) });
  await app.register(relationsRoutes, { relations: createRelationsService(schema) });
  await app.register(rolesRoutes, { roles: createRolesService(schema) });
  await app.register(conditionSetsRoutes, { conditionSets: createConditionSetsService(schema) });

  const hidden = { hide: true };
  app.get(
    "/healthz",
    { schema: { ...hidden, response: { 200: Type.Object({ status: Type.String() }) } } },
    async () => ({ status: "ok" }),
  );
  app.get("/readyz", { schema: hidden }, async (_req, reply) => {
    const ok = await store.ping();
    return reply.code(ok ? 200 : 503).send({ status: ok ? "ready" : "database unavailable" });
  });
  app.get("/openapi.json", { schema: hidden }, async () => app.swagger());
  app.get("/errors", { schema: hidden }, async () =>
    Object.entries(ERROR_CODES).map(([code, { status, title }]) => ({ error_code: code, status, title })),
  );

  app.decorate("notifier", notifier);
  return app;
}

declare module "fastify" {
  interface FastifyInstance {
    notifier: ChangeNotifier;
    tasks: TasksService;
    taskRunner: TaskRunner;
  }
}
