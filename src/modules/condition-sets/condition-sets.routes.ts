import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import {
  ConditionSetCreate,
  ConditionSetListQuery,
  ConditionSetParams,
  ConditionSetRead,
  ConditionSetRelativesQuery,
  ConditionSetUpdate,
} from "./condition-sets.schemas.ts";
import { createConditionSetsService } from "./condition-sets.service.ts";

export const conditionSetsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createConditionSetsService>[0]
> = async (app, deps) => {
  const conditionSets = createConditionSetsService(deps);
  const tags = ["condition sets"];
  const base = "/v2/schema/:proj_id/:env_id/condition_sets";
  const one = `${base}/:condition_set_id`;
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List condition sets (an array, or a page with include_total_count=true)",
        params: EnvParams,
        querystring: ConditionSetListQuery,
        response: {
          200: Type.Union([Type.Array(ConditionSetRead), Paginated(ConditionSetRead)]),
          ...errorResponses(404),
        },
      },
    },
    (req) => conditionSets.list(envOf(req), req.params, req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a user set or a resource set",
        params: EnvParams,
        body: ConditionSetCreate,
        response: { 200: ConditionSetRead, ...errorResponses(404, 409) },
      },
    },
    (req) => conditionSets.create(envOf(req), req.params, req.body),
  );
  app.get(
    one,
    {
      schema: {
        tags,
        summary: "Get a condition set",
        params: ConditionSetParams,
        response: { 200: ConditionSetRead, ...errorResponses(404) },
      },
    },
    (req) => conditionSets.get(envOf(req), req.params),
  );
  app.patch(
    one,
    {
      schema: {
        tags,
        summary: "Update a condition set; each field given replaces the stored one",
        params: ConditionSetParams,
        body: ConditionSetUpdate,
        response: { 200: ConditionSetRead, ...errorResponses(404) },
      },
    },
    (req) => conditionSets.update(envOf(req), req.params, req.body),
  );
  app.delete(
    one,
    {
      schema: {
        tags,
        summary: "Delete a condition set with its descendants and the set rules naming them",
        params: ConditionSetParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await conditionSets.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
  app.get(
    `${one}/ancestors`,
    {
      schema: {
        tags,
        summary: "The set's parent, its parent, and so on",
        params: ConditionSetParams,
        querystring: ConditionSetRelativesQuery,
        response: { 200: Type.Array(ConditionSetRead), ...errorResponses(404) },
      },
    },
    (req) => conditionSets.ancestors(envOf(req), req.params, pageRequest(req.query)),
  );
  app.get(
    `${one}/descendants`,
    {
      schema: {
        tags,
        summary: "The set's children, their children, and so on",
        params: ConditionSetParams,
        querystring: ConditionSetRelativesQuery,
        response: { 200: Type.Array(ConditionSetRead), ...errorResponses(404) },
      },
    },
    (req) => conditionSets.descendants(envOf(req), req.params, pageRequest(req.query)),
  );
};
