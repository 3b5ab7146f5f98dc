import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  PolicyApplied,
  PolicyApplyBody,
  PolicyExport,
  PolicyExportQuery,
  PolicyPlan,
  PolicyPlanBody,
  PolicyReplay,
  PolicyReplayBody,
} from "./policy.schemas.ts";
import { createPolicyService } from "./policy.service.ts";
import { createPolicyReplay } from "./policy.replay.ts";

export const policyRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createPolicyService>[0] & Parameters<typeof createPolicyReplay>[0]
> = async (app, deps) => {
  const policy = createPolicyService(deps);
  const replay = createPolicyReplay(deps);
  const tags = ["policy"];
  const base = "/v2/schema/:proj_id/:env_id/policy";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "Export the environment's policy as a YAML file",
        params: EnvParams,
        querystring: PolicyExportQuery,
        response: { 200: PolicyExport, ...errorResponses(404) },
      },
    },
    (req) => policy.export(envOf(req), req.query.with_facts ?? false),
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
          "All or nothing. 409 when the environment's revision is no longer the plan's `revision` (plan again), " +
          "unless `replan` is true: then the file is planned again against the environment as it is and applied, " +
          "and the answer says `replanned`.",
        params: EnvParams,
        body: PolicyApplyBody,
        response: { 200: PolicyApplied, ...errorResponses(404, 409) },
      },
    },
    (req) => policy.apply(envOf(req), req.body.policy, req.body.revision, req.body.replan ?? false),
  );
  app.post(
    `${base}/replay`,
    {
      config: { need: { access: "read" } },
      schema: {
        tags,
        summary:
          "What-if replay: which logged decisions (or given checks) a draft policy would flip (writes nothing)",
        description:
          "Decides each check of the decision log's window (default: the last 24 hours) or of `checks` twice, on " +
          "the environment as it is and on the draft (a policy file, a plan, or another environment's policy, " +
          "with this environment's facts), and answers the decisions that flip with both reasons, counts by " +
          "resource type and action, and the share that flips. 409 when a plan's `revision` is stale.",
        params: EnvParams,
        body: PolicyReplayBody,
        response: { 200: PolicyReplay, ...errorResponses(404, 409) },
      },
    },
    (req) => replay.replay(envOf(req), req.body),
  );
};
