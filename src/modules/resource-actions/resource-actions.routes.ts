import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses } from "../../lib/schemas.ts";
import { ListQuery, ResourceParams } from "../../domain/schema/schema.schemas.ts";
import {
  ActionParams,
  ResourceActionCreate,
  ResourceActionRead,
  ResourceActionUpdate,
} from "./resource-actions.schemas.ts";
import { createResourceActionsService } from "./resource-actions.service.ts";

export const resourceActionsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createResourceActionsService>[0]
> = async (app, deps) => {
  const actions = createResourceActionsService(deps);
  const tags = ["resource actions"];
  const base = "/v2/schema/:proj_id/:env_id/resources/:resource_id/actions";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the actions of a resource",
        params: ResourceParams,
        querystring: ListQuery,
        response: { 200: Type.Array(ResourceActionRead), ...errorResponses(404) },
      },
    },
    (req) => actions.list(envOf(req), req.params, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create an action",
        params: ResourceParams,
        body: ResourceActionCreate,
        response: { 200: ResourceActionRead, ...errorResponses(404, 409) },
      },
    },
    (req) => actions.create(envOf(req), req.params, req.body),
  );
  app.get(
    `${base}/:action_id`,
    {
      schema: {
        tags,
        summary: "Get an action",
        params: ActionParams,
        response: { 200: ResourceActionRead, ...errorResponses(404) },
      },
    },
    (req) => actions.get(envOf(req), req.params),
  );
  app.patch(
    `${base}/:action_id`,
    {
      schema: {
        tags,
        summary: "Update an action",
        params: ActionParams,
        body: ResourceActionUpdate,
        response: { 200: ResourceActionRead, ...errorResponses(404) },
      },
    },
    (req) => actions.update(envOf(req), req.params, req.body),
  );
  app.delete(
    `${base}/:action_id`,
    {
      schema: {
        tags,
        summary: "Delete an action and the permissions that grant it",
        params: ActionParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await actions.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
};
