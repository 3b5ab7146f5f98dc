import fp from "fastify-plugin";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { AppError } from "../lib/errors.ts";
import { hashSecret } from "../lib/secrets.ts";
import {
  assertAccess,
  assertCoversEnvironment,
  assertCoversProject,
  type AccessLevel,
  type Need,
  type Principal,
  type ScopeLevel,
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

const BEARER_RE = /^Bearer ([\x21-\x7e]{1,512})$/;

export async function findPrincipal(db: Kysely<Database>, secret: string): Promise<Principal | null> {
  const row = await db
    .selectFrom("api_keys as k")
    .leftJoin("projects as p", "p.id", "k.project_id")
    .leftJoin("environments as e", "e.id", "k.environment_id")
    .select([
      "k.id",
      "k.name",
      "k.organization_id",
      "k.project_id",
      "k.environment_id",
      "k.object_type",
      "k.access_level",
      "p.key as project_key",
      "e.key as environment_key",
    ])
    .where("k.secret_hash", "=", hashSecret(secret))
    .executeTakeFirst();
  if (!row) return null;
  return {
    keyId: row.id,
    keyName: row.name,
    organizationId: row.organization_id,
    projectId: row.project_id,
    projectKey: row.project_key,
    environmentId: row.environment_id,
    environmentKey: row.environment_key,
    level: row.object_type as ScopeLevel,
    access: row.access_level as AccessLevel,
  };
}

/**
 * Every /v2 request needs a valid key. No cache: a revoked or rotated key stops working with the next request,
 * and the lookup is one indexed read.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: { db: Kysely<Database> }) => {
    app.decorateRequest("principal", null);
    app.addHook("onRequest", async (request: FastifyRequest) => {
      if (!request.url.startsWith("/v2/") && request.url !== "/v2") return;
      const header = request.headers.authorization;
      if (header === undefined) throw new AppError("UNAUTHORIZED", "the Authorization header is missing");
      const match = BEARER_RE.exec(header);
      if (!match?.[1])
        throw new AppError("UNAUTHORIZED", "the Authorization header must be 'Bearer <API key>'");
      const principal = await findPrincipal(opts.db, match[1]);
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
