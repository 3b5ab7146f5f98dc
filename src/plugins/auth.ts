import fp from "fastify-plugin";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { AppError } from "../lib/errors.ts";
import { findPrincipal } from "../domain/api-key-records.ts";
import { resolvePathScope, type EnvScope, type ProjectScope } from "../domain/path-scope.ts";
import {
  assertAccess,
  assertCoversEnvironment,
  assertCoversProject,
  bearerSecret,
  type Need,
  type Principal,
} from "../lib/access.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
    /** The project (and environment) the path names, resolved once before the handler runs. */
    pathScope: ProjectScope | EnvScope | null;
  }
  interface FastifyContextConfig {
    /** What the route needs beyond the default (read access for reads, write access for other methods). */
    need?: Need;
  }
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Every /v2 request needs a valid key. No cache: a revoked or rotated key stops working with the next request,
 * and the lookup is one indexed read.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: { db: Kysely<Database> }) => {
    app.decorateRequest("principal", null);
    app.decorateRequest("pathScope", null);
    app.addHook("onRequest", async (request: FastifyRequest) => {
      if (!request.url.startsWith("/v2/") && request.url !== "/v2") return;
      const principal = await findPrincipal(opts.db, bearerSecret(request.headers.authorization));
      if (!principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
      request.principal = principal;
    });
    // The route's scope is decided before its body is validated: a key that may not call it gets 403, whatever
    // it sends.
    app.addHook("preValidation", async (request: FastifyRequest) => {
      const principal = request.principal;
      if (!principal) return;
      const params = request.params as Record<string, string | undefined>;
      const project = params["proj_id"];
      const environment = params["env_id"];
      if (project !== undefined && environment !== undefined)
        assertCoversEnvironment(principal, project, environment);
      else if (project !== undefined) assertCoversProject(principal, project);
      assertAccess(
        principal,
        request.routeOptions.config.need ?? { access: READ_METHODS.has(request.method) ? "read" : "write" },
      );
    });
    // After validation: a malformed body is a 422 even where the path names nothing (404).
    app.addHook("preHandler", async (request: FastifyRequest) => {
      const principal = request.principal;
      const params = request.params as Record<string, string | undefined>;
      const projectRef = params["proj_id"];
      if (!principal || projectRef === undefined) return;
      request.pathScope = await resolvePathScope(
        opts.db,
        principal.organizationId,
        projectRef,
        params["env_id"],
      );
    });
  },
  { name: "auth" },
);

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
  return request.principal;
}

/** The environment of a route whose path names one (`:proj_id/:env_id`). */
export function envOf(request: FastifyRequest): EnvScope {
  const scope = request.pathScope;
  if (!scope || !("environment" in scope)) throw new Error(`${request.url}: the route names no environment`);
  return scope;
}

/** The project of a route whose path names one (`:proj_id`). */
export function projectOf(request: FastifyRequest): ProjectScope {
  if (!request.pathScope) throw new Error(`${request.url}: the route names no project`);
  return request.pathScope;
}
