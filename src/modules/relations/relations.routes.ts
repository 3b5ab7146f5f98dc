import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses, Paginated } from "../../lib/schemas.ts";
import { ListQuery, ResourceParams } from "../../domain/schema/schema.schemas.ts";
import { RelationCreate, RelationParams, RelationRead } from "./relations.schemas.ts";
import { createRelationsService } from "./relations.service.ts";

export const relationsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createRelationsService>[0]
> = async (app, deps) => {
  const relations = createRelationsService(deps);
  const tags = ["resource relations"];
  const base = "/v2/schema/:proj_id/:env_id/resources/:resource_id/relations";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the relations of a resource (the resource is their object)",
        params: ResourceParams,
        querystring: ListQuery,
        response: { 200: Paginated(RelationRead), ...errorResponses(404) },
      },
    },
    (req) => relations.list(envOf(req), req.params, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a relation from a subject resource to this resource",
        params: ResourceParams,
        body: RelationCreate,
        response: { 200: RelationRead, ...errorResponses(404, 409) },
      },
    },
    (req) => relations.create(envOf(req), req.params, req.body),
  );
  app.get(
    `${base}/:relation_id`,
    {
      schema: {
        tags,
        summary: "Get a relation",
        params: RelationParams,
        response: { 200: RelationRead, ...errorResponses(404) },
      },
    },
    (req) => relations.get(envOf(req), req.params),
  );
  app.delete(
    `${base}/:relation_id`,
    {
      schema: {
        tags,
        summary: "Delete a relation with its tuples and the derivations through it",
        params: RelationParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await relations.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
};
