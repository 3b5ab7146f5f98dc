import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf, principalOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  APIKeyCreate,
  APIKeyListQuery,
  APIKeyPage,
  APIKeyRead,
  APIKeyScopeRead,
  KeyIdParams,
} from "./api-keys.schemas.ts";
import { createApiKeysService } from "./api-keys.service.ts";

/** Keys are managed by organization admins only. */
const ORG_ADMIN = { need: { level: "org", access: "admin" } } as const;

export const apiKeysRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createApiKeysService>[0]> = async (
  app,
  deps,
) => {
  const apiKeys = createApiKeysService(deps);
  const tags = ["api-keys"];
  app.get(
    "/v2/api-key/scope",
    {
      schema: {
        tags,
        summary: "The scope of the calling key (ids only)",
        response: { 200: APIKeyScopeRead, ...errorResponses() },
      },
    },
    (req) => apiKeys.scopeOf(principalOf(req)),
  );
  app.get(
    "/v2/api-key",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "List API keys (organization admins)",
        querystring: APIKeyListQuery,
        response: { 200: APIKeyPage, ...errorResponses(404) },
      },
    },
    (req) => {
      const { object_type, proj_id } = req.query;
      return apiKeys.list(
        principalOf(req),
        { ...(object_type && { objectType: object_type }), ...(proj_id && { projRef: proj_id }) },
        pageRequest(req.query),
      );
    },
  );
  app.post(
    "/v2/api-key",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Create an API key; the secret is in the response",
        body: APIKeyCreate,
        response: { 200: APIKeyRead, ...errorResponses(404) },
      },
    },
    (req) => apiKeys.create(principalOf(req), req.body),
  );
  app.get(
    "/v2/api-key/:proj_id/:env_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "The environment's API key, with its secret",
        params: EnvParams,
        response: { 200: APIKeyRead, ...errorResponses(404) },
      },
    },
    (req) => apiKeys.environmentKey(envOf(req)),
  );
  app.get(
    "/v2/api-key/:api_key_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Get an API key, with its secret",
        params: KeyIdParams,
        response: { 200: APIKeyRead, ...errorResponses(404) },
      },
    },
    (req) => apiKeys.get(principalOf(req), req.params.api_key_id),
  );
  app.delete(
    "/v2/api-key/:api_key_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Revoke an API key: it stops working at once",
        params: KeyIdParams,
        response: { 204: Type.Null(), ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      await apiKeys.remove(principalOf(req), req.params.api_key_id);
      return reply.code(204).send(null);
    },
  );
  app.post(
    "/v2/api-key/:api_key_id/rotate-secret",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Replace the secret; the old one stops working at once",
        params: KeyIdParams,
        response: { 200: APIKeyRead, ...errorResponses(404) },
      },
    },
    (req) => apiKeys.rotate(principalOf(req), req.params.api_key_id),
  );
};
