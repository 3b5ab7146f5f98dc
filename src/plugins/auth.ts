import fp from "fastify-plugin";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { AppError } from "../lib/errors.ts";
import { hashSecret } from "../lib/secrets.ts";
import type { AccessLevel, Principal, ScopeLevel } from "../lib/access.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

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
  },
  { name: "auth" },
);

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
  return request.principal;
}
