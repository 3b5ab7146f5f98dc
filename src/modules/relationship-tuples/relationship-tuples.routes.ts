import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import {
  EmptyResult,
  RelationshipTupleBulkCreate,
  RelationshipTupleBulkDelete,
  RelationshipTupleCreate,
  RelationshipTupleDelete,
  RelationshipTupleDetailedQuery,
  RelationshipTupleList,
  RelationshipTupleListQuery,
  RelationshipTupleRead,
} from "./relationship-tuples.schemas.ts";
import { createRelationshipTuplesService } from "./relationship-tuples.service.ts";

export const relationshipTuplesRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createRelationshipTuplesService>[0]
> = async (app, deps) => {
  const tuples = createRelationshipTuplesService(deps);
  const tags = ["relationship-tuples"];
  const base = "/v2/facts/:proj_id/:env_id/relationship_tuples";
  app.get(
    base,
    {
      schema: {
        tags,
        summary:
          "List relationship tuples: an array, or the paginated envelope with include_total_count=true",
        params: EnvParams,
        querystring: RelationshipTupleListQuery,
        response: { 200: RelationshipTupleList, ...errorResponses(404) },
      },
    },
    (req) => tuples.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.get(
    `${base}/detailed`,
    {
      schema: {
        tags,
        summary: "List relationship tuples with subject, object, relation and tenant details (paginated)",
        params: EnvParams,
        querystring: RelationshipTupleDetailedQuery,
        response: { 200: Paginated(RelationshipTupleRead), ...errorResponses(404) },
      },
    },
    (req) => tuples.listDetailed(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a relationship tuple (missing instances are created in its tenant)",
        params: EnvParams,
        body: RelationshipTupleCreate,
        response: { 200: RelationshipTupleRead, ...errorResponses(404, 409) },
      },
    },
    (req) => tuples.create(envOf(req), req.body),
  );
  app.delete(
    base,
    {
      schema: {
        tags,
        summary: "Delete a relationship tuple",
        params: EnvParams,
        body: RelationshipTupleDelete,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await tuples.remove(envOf(req), req.body);
      return reply.code(204).send(null);
    },
  );
  app.post(
    `${base}/bulk`,
    {
      schema: {
        tags,
        summary: "Create many relationship tuples; all or nothing, existing tuples are kept",
        params: EnvParams,
        body: RelationshipTupleBulkCreate,
        response: { 200: EmptyResult, ...errorResponses(404) },
      },
    },
    (req) => tuples.bulkCreate(envOf(req), req.body.operations),
  );
  app.delete(
    `${base}/bulk`,
    {
      schema: {
        tags,
        summary: "Delete many relationship tuples; all or nothing",
        params: EnvParams,
        body: RelationshipTupleBulkDelete,
        response: { 200: EmptyResult, ...errorResponses(404) },
      },
    },
    (req) => tuples.bulkDelete(envOf(req), req.body.idents),
  );
};
