import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses } from "../../lib/schemas.ts";
import { ListQuery, ResourceParams } from "../../domain/schema/schema.schemas.ts";
import {
  ActionGroupParams,
  ResourceActionGroupCreate,
  ResourceActionGroupRead,
  ResourceActionGroupUpdate,
} from "./action-groups.schemas.ts";
import { createActionGroupsService } from "./action-groups.service.ts";

export const actionGroupsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createActionGroupsService>[0]
> = async (app, deps) => {
  const actionGroups = createActionGroupsService(deps);
  const tags = ["action groups"];
  const base = "/v2/schema/:proj_id/:env_id/resources/:resource_id/action_groups";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the action groups of a resource",
        params: ResourceParams,
        querystring: ListQuery,
        response: { 200: Type.Array(ResourceActionGroupRead), ...errorResponses(404) },
      },
    },
    (req) => actionGroups.list(envOf(req), req.params, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create an action group",
        params: ResourceParams,
        body: ResourceActionGroupCreate,
        response: { 200: ResourceActionGroupRead, ...errorResponses(404, 409) },
      },
    },
    (req) => actionGroups.create(envOf(req), req.params, req.body),
  );
  app.get(
    `${base}/:action_group_id`,
    {
      schema: {
        tags,
        summary: "Get an action group",
        params: ActionGroupParams,
        response: { 200: ResourceActionGroupRead, ...errorResponses(404) },
      },
    },
    (req) => actionGroups.get(envOf(req), req.params),
  );
  app.patch(
    `${base}/:action_group_id`,
    {
      schema: {
        tags,
        summary: "Update an action group",
        params: ActionGroupParams,
        body: ResourceActionGroupUpdate,
        response: { 200: ResourceActionGroupRead, ...errorResponses(404) },
      },
    },
    (req) => actionGroups.update(envOf(req), req.params, req.body),
  );
  app.delete(
    `${base}/:action_group_id`,
    {
      schema: {
        tags,
        summary: "Delete an action group",
        params: ActionGroupParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await actionGroups.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
};
