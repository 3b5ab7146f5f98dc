import fp from "fastify-plugin";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { AppError } from "../lib/errors.ts";
import { findPrincipal } from "../domain/api-key-records.ts";
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
  }
  interface FastifyContextConfig {
    /** What the route needs beyond the default (any key for reads, write access for other methods). */
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
    app.addHook("onRequest", async (request: FastifyRequest) => {
      if (!request.url.startsWith("/v2/") && request.url !== "/v2") return;
      const principal = await findPrincipal(opts.db, bearerSecret(request.headers.authorization));
      if (!principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
      request.principal = principal;
    });
    // The route's scope is decided before its body is validated: a key that may not call it gets 403, whatever
    // it sends. Services check the same (and more, such as whether the object exists) when they run.
    app.addHook("preValidation", async (request: FastifyRequest) => {
      const principal = request.principal;
      if (!principal) return;
      const params = request.params as Record<string, string | undefined>;
      const project = params["proj_id"];
      const environment = params["env_id"];
      if (project !== undefined && environment !== undefined)
        assertCoversEnvironment(principal, project, environment);
      else if (project !== undefined) assertCoversProject(principal, project);
      const need =
        request.routeOptions.config.need ??
        (READ_METHODS.has(request.method) ? undefined : ({ access: "write" } as const));
      if (need) assertAccess(principal, need);
    });
  },
  { name: "auth" },
);

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
  return request.principal;
}
