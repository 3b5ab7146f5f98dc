import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { errorResponses } from "../../lib/schemas.ts";
import {
  BulkCheckRequest,
  BulkCheckResult,
  CheckRequest,
  CheckResult,
  EnvParams,
  PdpStatus,
  ListResourcesRequest,
  ListResourcesResult,
  ListSubjectsRequest,
  ListSubjectsResult,
  PlanRequest,
  PlanResult,
  UserPermissionsRequest,
  UserPermissionsResult,
} from "./decisions.schemas.ts";
import { createDecisionsService } from "./decisions.service.ts";

/** Checks are reads: a key or member with read access may ask them (their body makes them POSTs). */
const config = { need: { access: "read" as const } };

/** Gatehouse's own: the PDP's checks on the control plane's port, with its session or key auth. */
export const decisionsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createDecisionsService>[0]
> = async (app, deps) => {
  const checks = createDecisionsService(deps);
  const tags = ["checks"];
  app.post(
    "/v2/pdps/:proj_id/:env_id/allowed",
    {
      config,
      schema: {
        tags,
        summary:
          "One check decided by the embedded PDP (Gatehouse's own): the PDP's answer, its reason and revision",
        params: EnvParams,
        body: CheckRequest,
        response: { 200: CheckResult, ...errorResponses(404, 503) },
      },
    },
    (req) => checks.check(envOf(req), req.body),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/allowed/bulk",
    {
      config,
      schema: {
        tags,
        summary: "Several checks decided by the embedded PDP, in order (Gatehouse's own)",
        params: EnvParams,
        body: BulkCheckRequest,
        response: { 200: BulkCheckResult, ...errorResponses(404, 503) },
      },
    },
    (req) => checks.bulk(envOf(req), req.body),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/user-permissions",
    {
      config,
      schema: {
        tags,
        summary: "What a user may do, by tenant and instance, from the embedded PDP (Gatehouse's own)",
        params: EnvParams,
        body: UserPermissionsRequest,
        response: {
          200: UserPermissionsResult,
          ...errorResponses(404, 503),
        },
      },
    },
    (req) => checks.userPermissions(envOf(req), req.body),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/plan/resources",
    {
      config,
      schema: {
        tags,
        summary:
          "A filter plan from the embedded PDP (Gatehouse's own): the instances of a type a user may act on, as " +
          "a condition on their fields (docs/data-filtering.md)",
        params: EnvParams,
        body: PlanRequest,
        response: { 200: PlanResult, ...errorResponses(404, 503) },
      },
    },
    (req) => checks.planResources(envOf(req), req.body),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/list/resources",
    {
      config,
      schema: {
        tags,
        summary:
          "A page of the instances of a type a user may act on, from the embedded PDP (Gatehouse's own; " +
          "docs/data-filtering.md)",
        params: EnvParams,
        body: ListResourcesRequest,
        response: { 200: ListResourcesResult, ...errorResponses(404, 410, 503) },
      },
    },
    (req) => checks.listResources(envOf(req), req.body),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/list/subjects",
    {
      config,
      schema: {
        tags,
        summary:
          "A page of the users who may act on a resource, from the embedded PDP (Gatehouse's own; " +
          "docs/data-filtering.md)",
        params: EnvParams,
        body: ListSubjectsRequest,
        response: { 200: ListSubjectsResult, ...errorResponses(404, 410, 503) },
      },
    },
    (req) => checks.listSubjects(envOf(req), req.body),
  );
  app.get(
    "/v2/pdps/:proj_id/:env_id/status",
    {
      schema: {
        tags,
        summary: "The embedded PDP's revision of the environment and its lag (Gatehouse's own)",
        params: EnvParams,
        response: { 200: PdpStatus, ...errorResponses(404, 503) },
      },
    },
    (req) => checks.status(envOf(req)),
  );
};
