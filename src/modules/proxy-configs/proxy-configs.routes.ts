import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  ProxyConfigCreate,
  ProxyConfigListQuery,
  ProxyConfigParams,
  ProxyConfigRead,
  ProxyConfigUpdate,
} from "./proxy-configs.schemas.ts";
import { createProxyConfigsService } from "./proxy-configs.service.ts";

/** Permit's proxy configs; their URL mapping rules reach the PDP (`/allowed_url`) through the change feed. */
export const proxyConfigsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createProxyConfigsService>[0]
> = async (app, deps) => {
  const configs = createProxyConfigsService(deps);
  const tags = ["proxy configs"];
  const base = "/v2/facts/:proj_id/:env_id/proxy_configs";
  const one = `${base}/:proxy_config_id`;
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List proxy configs",
        params: EnvParams,
        querystring: ProxyConfigListQuery,
        response: { 200: Type.Array(ProxyConfigRead), ...errorResponses(404) },
      },
    },
    (req) => configs.list(envOf(req), pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a proxy config with its URL mapping rules",
        params: EnvParams,
        body: ProxyConfigCreate,
        response: { 200: ProxyConfigRead, ...errorResponses(404, 409) },
      },
    },
    (req) => configs.create(envOf(req), req.body),
  );
  app.get(
    one,
    {
      schema: {
        tags,
        summary: "Get a proxy config",
        params: ProxyConfigParams,
        response: { 200: ProxyConfigRead, ...errorResponses(404) },
      },
    },
    (req) => configs.get(envOf(req), req.params.proxy_config_id),
  );
  app.patch(
    one,
    {
      schema: {
        tags,
        summary:
          "Update a proxy config (a mapping rule with should_delete removes the rule of its method and url)",
        params: ProxyConfigParams,
        body: ProxyConfigUpdate,
        response: { 200: ProxyConfigRead, ...errorResponses(404) },
      },
    },
    (req) => configs.update(envOf(req), req.params.proxy_config_id, req.body),
  );
  app.delete(
    one,
    {
      schema: {
        tags,
        summary: "Delete a proxy config",
        params: ProxyConfigParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await configs.remove(envOf(req), req.params.proxy_config_id);
      return reply.code(204).send(null);
    },
  );
};
