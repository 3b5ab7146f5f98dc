import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { ConditionSetRuleCreate, ConditionSetRuleRead, SetRuleListQuery } from "./set-rules.schemas.ts";
import { createSetRulesService } from "./set-rules.service.ts";

export const setRulesRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createSetRulesService>[0]> = async (
  app,
  deps,
) => {
  const setRules = createSetRulesService(deps);
  const tags = ["condition-set-rules"];
  const base = "/v2/facts/:proj_id/:env_id/set_rules";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List condition set rules",
        params: EnvParams,
        querystring: SetRuleListQuery,
        response: { 200: Type.Array(ConditionSetRuleRead), ...errorResponses(404) },
      },
    },
    (req) => setRules.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Grant a permission to a user set on a resource set (the response is an array)",
        params: EnvParams,
        body: ConditionSetRuleCreate,
        response: { 200: Type.Array(ConditionSetRuleRead), ...errorResponses(404, 409) },
      },
    },
    (req) => setRules.create(envOf(req), req.body),
  );
  app.delete(
    base,
    {
      schema: {
        tags,
        summary: "Delete a condition set rule",
        params: EnvParams,
        body: ConditionSetRuleCreate,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await setRules.remove(envOf(req), req.body);
      return reply.code(204).send(null);
    },
  );
};
