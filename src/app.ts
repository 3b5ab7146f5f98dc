import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import secureJson from "secure-json-parse";
import { Ajv, type Options as AjvOptions } from "ajv";
import addFormats from "ajv-formats";
import { Type } from "typebox";
import type { Store } from "./db/store.ts";
import { AppError, ERROR_CODES } from "./lib/errors.ts";
import { ErrorBodySchema } from "./lib/schemas.ts";
import type { SecretBox } from "./lib/secrets.ts";
import { ChangeNotifier } from "./changes/feed.ts";
import { authPlugin } from "./plugins/auth.ts";
import { errorsPlugin } from "./plugins/errors.ts";
import { revisionsPlugin } from "./plugins/revisions.ts";
import { createScopeService } from "./modules/scope/scope.service.ts";
import { createOrganizationsService } from "./modules/organizations/organizations.service.ts";
import { organizationsRoutes } from "./modules/organizations/organizations.routes.ts";
import { createProjectsService } from "./modules/projects/projects.service.ts";
import { projectsRoutes } from "./modules/projects/projects.routes.ts";
import { createEnvironmentsService } from "./modules/environments/environments.service.ts";
import { environmentsRoutes } from "./modules/environments/environments.routes.ts";
import { createApiKeysService } from "./modules/api-keys/api-keys.service.ts";
import { apiKeysRoutes } from "./modules/api-keys/api-keys.routes.ts";

export interface AppConfig {
  publicUrl: string;
  bodyLimitBytes: number;
  logLevel: string;
}

export interface AppDeps {
  config: AppConfig;
  store: Store;
  box: SecretBox;
  notifier?: ChangeNotifier;
  /** Tests pass `false`; the server passes pino options. */
  logger?: FastifyServerOptions["logger"];
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
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === "body" ? jsonAjv : textAjv).compile(schema as object),
  );

  // An empty body is "no body" (some clients send a Content-Type on DELETE); anything else must be JSON.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: "remove", constructorAction: "remove" }));
    } catch {
      done(
        new AppError("INVALID_INPUT", "the body is not valid JSON", undefined, [
          { loc: ["body"], msg: "invalid JSON", type: "json_invalid" },
        ]),
        undefined,
      );
    }
  });

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
  await app.register(errorsPlugin, { publicUrl: config.publicUrl });
  await app.register(authPlugin, { db: store.db });
  await app.register(revisionsPlugin, { notifier });

  const scope = createScopeService(store.db);
  const organizations = createOrganizationsService({ db: store.db, box });
  const projects = createProjectsService({ db: store.db, box, scope });
  const environments = createEnvironmentsService({ db: store.db, box, scope });
  const apiKeys = createApiKeysService({ db: store.db, box, scope });

  await app.register(organizationsRoutes, { organizations });
  await app.register(projectsRoutes, { projects });
  await app.register(environmentsRoutes, { environments });
  await app.register(apiKeysRoutes, { apiKeys });

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
  }
}
