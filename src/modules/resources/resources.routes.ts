import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";
import {
  ResourceCreate,
  ResourceListQuery,
  ResourceRead,
  ResourceReplace,
  ResourceUpdate,
} from "./resources.schemas.ts";
import { createResourcesService } from "./resources.service.ts";

export const resourcesRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createResourcesService>[0]
> = async (app, deps) => {
  const resources = createResourcesService(deps);
  const tags = ["resources"];
  const base = "/v2/schema/:proj_id/:env_id/resources";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List resources (an array, or a page with include_total_count=true)",
        params: EnvParams,
        querystring: ResourceListQuery,
        response: {
          200: Type.Union([Type.Array(ResourceRead), Paginated(ResourceRead)]),
          ...errorResponses(404),
        },
      },
    },
    (req) => resources.list(envOf(req), req.params, req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a resource with its actions, attributes, relations and roles",
        params: EnvParams,
        body: ResourceCreate,
        response: { 200: ResourceRead, ...errorResponses(404, 409) },
      },
    },
    (req) => resources.create(envOf(req), req.params, req.body),
  );
  app.get(
    `${base}/:resource_id`,
    {
      schema: {
        tags,
        summary: "Get a resource",
        params: ResourceParams,
        response: { 200: ResourceRead, ...errorResponses(404) },
      },
    },
    (req) => resources.get(envOf(req), req.params),
  );
  app.put(
    `${base}/:resource_id`,
    {
      schema: {
        tags,
        summary: "Replace a resource's definition, or create it under the key in the path",
        params: ResourceParams,
        body: ResourceReplace,
        response: { 200: ResourceRead, ...errorResponses(404, 409) },
      },
    },
    (req) => resources.replace(envOf(req), req.params, req.body),
  );
  app.patch(
    `${base}/:resource_id`,
    {
      schema: {
        tags,
        summary: "Update a resource; each field or block given replaces the stored one",
        params: ResourceParams,
        body: ResourceUpdate,
        response: { 200: ResourceRead, ...errorResponses(404, 409) },
      },
    },
    (req) => resources.update(envOf(req), req.params, req.body),
  );
  app.delete(
    `${base}/:resource_id`,
    {
      schema: {
        tags,
        summary: "Delete a resource and everything that names it",
        params: ResourceParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await resources.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
};
