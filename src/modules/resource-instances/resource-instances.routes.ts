import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import {
  InstanceGetQuery,
  InstanceParams,
  ResourceInstanceCreate,
  ResourceInstanceDetailedQuery,
  ResourceInstanceList,
  ResourceInstanceListQuery,
  ResourceInstanceRead,
  ResourceInstanceUpdate,
} from "./resource-instances.schemas.ts";
import { createResourceInstancesService } from "./resource-instances.service.ts";

export const resourceInstancesRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createResourceInstancesService>[0]
> = async (app, deps) => {
  const instances = createResourceInstancesService(deps);
  const tags = ["resource-instances"];
  const base = "/v2/facts/:proj_id/:env_id/resource_instances";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List resource instances: an array, or the paginated envelope with include_total_count=true",
        params: EnvParams,
        querystring: ResourceInstanceListQuery,
        response: { 200: ResourceInstanceList, ...errorResponses(404) },
      },
    },
    (req) => instances.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.get(
    `${base}/detailed`,
    {
      schema: {
        tags,
        summary: "List resource instances with their relationships (paginated)",
        params: EnvParams,
        querystring: ResourceInstanceDetailedQuery,
        response: { 200: Paginated(ResourceInstanceRead), ...errorResponses(404) },
      },
    },
    (req) => instances.listDetailed(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a resource instance",
        params: EnvParams,
        body: ResourceInstanceCreate,
        response: { 201: ResourceInstanceRead, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const created = await instances.create(envOf(req), req.body);
      return reply.code(201).send(created);
    },
  );
  app.get(
    `${base}/:instance_id`,
    {
      schema: {
        tags,
        summary: "Get a resource instance by id, `type:key` or key",
        params: InstanceParams,
        querystring: InstanceGetQuery,
        response: { 200: ResourceInstanceRead, ...errorResponses(404) },
      },
    },
    (req) => instances.get(envOf(req), req.params.instance_id, req.query.detailed === true),
  );
  app.patch(
    `${base}/:instance_id`,
    {
      schema: {
        tags,
        summary: "Replace a resource instance's attributes",
        params: InstanceParams,
        body: ResourceInstanceUpdate,
        response: { 200: ResourceInstanceRead, ...errorResponses(404) },
      },
    },
    (req) => instances.update(envOf(req), req.params.instance_id, req.body),
  );
  app.delete(
    `${base}/:instance_id`,
    {
      schema: {
        tags,
        summary: "Delete a resource instance with its relationship tuples and role assignments",
        params: InstanceParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await instances.remove(envOf(req), req.params.instance_id);
      return reply.code(204).send(null);
    },
  );
};
