import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { ListQuery, ResourceParams } from "../../domain/schema/schema.schemas.ts";
import {
  AttributeParams,
  ResourceAttributeCreate,
  ResourceAttributeRead,
  ResourceAttributeUpdate,
  UserAttributeListQuery,
  UserAttributeParams,
  UserAttributeQuery,
} from "./resource-attributes.schemas.ts";
import { createResourceAttributesService } from "./resource-attributes.service.ts";

export const resourceAttributesRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createResourceAttributesService>[0]
> = async (app, deps) => {
  const attributes = createResourceAttributesService(deps);
  const tags = ["resource attributes"];
  const base = "/v2/schema/:proj_id/:env_id/resources/:resource_id/attributes";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the attributes of a resource",
        params: ResourceParams,
        querystring: ListQuery,
        response: { 200: Type.Array(ResourceAttributeRead), ...errorResponses(404) },
      },
    },
    (req) =>
      attributes.list(envOf(req), req.params, { resource: req.params.resource_id }, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a resource attribute",
        params: ResourceParams,
        body: ResourceAttributeCreate,
        response: { 200: ResourceAttributeRead, ...errorResponses(404, 409) },
      },
    },
    (req) => attributes.create(envOf(req), req.params, { resource: req.params.resource_id }, req.body),
  );
  app.get(
    `${base}/:attribute_id`,
    {
      schema: {
        tags,
        summary: "Get a resource attribute",
        params: AttributeParams,
        response: { 200: ResourceAttributeRead, ...errorResponses(404) },
      },
    },
    (req) =>
      attributes.get(envOf(req), req.params, { resource: req.params.resource_id }, req.params.attribute_id),
  );
  app.patch(
    `${base}/:attribute_id`,
    {
      schema: {
        tags,
        summary: "Update a resource attribute",
        params: AttributeParams,
        body: ResourceAttributeUpdate,
        response: { 200: ResourceAttributeRead, ...errorResponses(404) },
      },
    },
    (req) =>
      attributes.update(
        envOf(req),
        req.params,
        { resource: req.params.resource_id },
        req.params.attribute_id,
        req.body,
      ),
  );
  app.delete(
    `${base}/:attribute_id`,
    {
      schema: {
        tags,
        summary: "Delete a resource attribute",
        params: AttributeParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await attributes.remove(
        envOf(req),
        req.params,
        { resource: req.params.resource_id },
        req.params.attribute_id,
      );
      return reply.code(204).send(null);
    },
  );

  // User attributes: the attributes of the built-in `__user` resource.
  const userTags = ["user attributes"];
  const users = "/v2/schema/:proj_id/:env_id/users/attributes";
  const owner = { users: true } as const;
  app.get(
    users,
    {
      schema: {
        tags: userTags,
        summary: "List user attributes",
        params: EnvParams,
        querystring: UserAttributeListQuery,
        response: { 200: Type.Array(ResourceAttributeRead), ...errorResponses(404) },
      },
    },
    (req) => attributes.list(envOf(req), req.params, owner, pageRequest(req.query)),
  );
  app.post(
    users,
    {
      schema: {
        tags: userTags,
        summary: "Create a user attribute",
        params: EnvParams,
        querystring: UserAttributeQuery,
        body: ResourceAttributeCreate,
        response: { 200: ResourceAttributeRead, ...errorResponses(404, 409) },
      },
    },
    (req) => attributes.create(envOf(req), req.params, owner, req.body),
  );
  app.get(
    `${users}/:attribute_id`,
    {
      schema: {
        tags: userTags,
        summary: "Get a user attribute",
        params: UserAttributeParams,
        querystring: UserAttributeQuery,
        response: { 200: ResourceAttributeRead, ...errorResponses(404) },
      },
    },
    (req) => attributes.get(envOf(req), req.params, owner, req.params.attribute_id),
  );
  app.patch(
    `${users}/:attribute_id`,
    {
      schema: {
        tags: userTags,
        summary: "Update a user attribute",
        params: UserAttributeParams,
        querystring: UserAttributeQuery,
        body: ResourceAttributeUpdate,
        response: { 200: ResourceAttributeRead, ...errorResponses(404) },
      },
    },
    (req) => attributes.update(envOf(req), req.params, owner, req.params.attribute_id, req.body),
  );
  app.delete(
    `${users}/:attribute_id`,
    {
      schema: {
        tags: userTags,
        summary: "Delete a user attribute",
        params: UserAttributeParams,
        querystring: UserAttributeListQuery,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await attributes.remove(envOf(req), req.params, owner, req.params.attribute_id);
      return reply.code(204).send(null);
    },
  );
};
