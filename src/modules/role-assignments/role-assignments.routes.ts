import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { schedulePeriodic } from "../../lib/periodic.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import { ReturnDeletedQuery } from "../users/users.schemas.ts";
import {
  BulkAssignBody,
  BulkAssignQuery,
  BulkAssignReport,
  BulkUnassignBody,
  BulkUnassignReport,
  RoleAssignmentCreate,
  RoleAssignmentDetailedQuery,
  RoleAssignmentDetailedRead,
  RoleAssignmentList,
  RoleAssignmentListQuery,
  RoleAssignmentRead,
  RoleAssignmentRemove,
} from "./role-assignments.schemas.ts";
import type { DatabaseOutage } from "../../db/outage.ts";
import { createRoleAssignmentsService, purgeExpiredAssignments } from "./role-assignments.service.ts";

export const roleAssignmentsRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createRoleAssignmentsService>[0] &
    Parameters<typeof purgeExpiredAssignments>[0] & { outage: DatabaseOutage }
> = async (app, deps) => {
  const roleAssignments = createRoleAssignmentsService(deps);
  // PDPs stop granting at an assignment's expiry on their own; this deletes the rows and tells every PDP.
  schedulePeriodic(
    app,
    "expired role assignment purge",
    60_000,
    () => purgeExpiredAssignments(deps),
    deps.outage,
  );
  const tags = ["role-assignments"];
  const base = "/v2/facts/:proj_id/:env_id/role_assignments";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List role assignments; the shape follows detailed x include_total_count",
        params: EnvParams,
        querystring: RoleAssignmentListQuery,
        response: { 200: RoleAssignmentList, ...errorResponses(404) },
      },
    },
    (req) => roleAssignments.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.get(
    `${base}/detailed`,
    {
      schema: {
        tags,
        summary: "List role assignments with the user, role, tenant and instance (paginated)",
        params: EnvParams,
        querystring: RoleAssignmentDetailedQuery,
        response: { 200: Paginated(RoleAssignmentDetailedRead), ...errorResponses(404) },
      },
    },
    (req) => roleAssignments.listDetailed(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Assign a role to a user in a tenant or on a resource instance",
        params: EnvParams,
        body: RoleAssignmentCreate,
        response: { 200: RoleAssignmentRead, ...errorResponses(404, 409) },
      },
    },
    (req) => roleAssignments.assign(envOf(req), req.body),
  );
  app.delete(
    base,
    {
      schema: {
        tags,
        summary: "Unassign a role (404 when not assigned)",
        params: EnvParams,
        querystring: ReturnDeletedQuery,
        body: RoleAssignmentRemove,
        response: { 200: RoleAssignmentRead, 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const removed = await roleAssignments.unassign(envOf(req), req.body);
      return req.query.return_deleted ? removed : reply.code(204).send(null);
    },
  );
  app.post(
    `${base}/bulk`,
    {
      schema: {
        tags,
        summary: "Assign many roles at once (a bare JSON array); all or nothing",
        params: EnvParams,
        querystring: BulkAssignQuery,
        body: BulkAssignBody,
        response: { 200: BulkAssignReport, ...errorResponses(404) },
      },
    },
    (req) => roleAssignments.bulkAssign(envOf(req), req.body, req.query.missing_user_policy ?? "fail"),
  );
  app.delete(
    `${base}/bulk`,
    {
      schema: {
        tags,
        summary: "Unassign many roles at once (a bare JSON array); all or nothing",
        params: EnvParams,
        body: BulkUnassignBody,
        response: { 200: BulkUnassignReport, ...errorResponses(404) },
      },
    },
    (req) => roleAssignments.bulkUnassign(envOf(req), req.body),
  );
};
