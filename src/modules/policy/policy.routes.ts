import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  PolicyApplied,
  PolicyApplyBody,
  PolicyExport,
  PolicyPlan,
  PolicyPlanBody,
} from "./policy.schemas.ts";
import { createPolicyService } from "./policy.service.ts";

export const policyRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createPolicyService>[0]> = async (
  app,
  deps,
) => {
  const policy = createPolicyService(deps);
  const tags = ["policy"];
  const base = "/v2/schema/:proj_id/:env_id/policy";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "Export the environment's policy as a YAML file",
        params: EnvParams,
        response: { 200: PolicyExport, ...errorResponses(404) },
      },
    },
    (req) => policy.export(envOf(req)),
  );
  app.post(
    `${base}/plan`,
    {
      config: { need: { access: "read" } },
      schema: {
        tags,
        summary: "What applying a policy file would create, change and delete (writes nothing)",
        description:
          "Answers the changes object by object, the dangerous ones (deletions that remove role assignments or " +
          "instances, attributes a condition set uses) and the environment's revision, which apply takes back.",
        params: EnvParams,
        body: PolicyPlanBody,
        response: { 200: PolicyPlan, ...errorResponses(404) },
      },
    },
    (req) => policy.plan(envOf(req), req.body.policy),
  );
  app.post(
    `${base}/apply`,
    {
      schema: {
        tags,
        summary: "Apply a policy file in one transaction and one revision",
        description:
          "All or nothing. 409 when the environment's revision is no longer the plan's `revision` (plan again).",
        params: EnvParams,
        body: PolicyApplyBody,
        response: { 200: PolicyApplied, ...errorResponses(404, 409) },
      },
    },
    (req) => policy.apply(envOf(req), req.body.policy, req.body.revision),
  );
};
