import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, Paginated } from "../../lib/schemas.ts";
import {
  RoleCreate,
  RoleCreateBulkOperation,
  RoleCreateBulkOperationResult,
  RoleList,
  RoleListQuery,
  RoleParams,
  RoleParentParams,
  RolePermissionsBody,
  RolePermissionsBulk,
  RolePermissionsBulkResult,
  RoleRead,
  RoleUpdate,
} from "./roles.schemas.ts";
import { createRolesService } from "./roles.service.ts";

export const rolesRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createRolesService>[0]> = async (
  app,
  deps,
) => {
  const roles = createRolesService(deps);
  const tags = ["roles"];
  const base = "/v2/schema/:proj_id/:env_id/roles";
  const one = `${base}/:role_id`;
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List tenant roles (an array, or a page with include_total_count=true)",
        params: EnvParams,
        querystring: RoleListQuery,
        response: { 200: Type.Union([Type.Array(RoleRead), Paginated(RoleRead)]), ...errorResponses(404) },
      },
    },
    (req) => roles.list(envOf(req), req.params, req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a tenant role",
        params: EnvParams,
        body: RoleCreate,
        response: { 200: RoleRead, ...errorResponses(404, 409) },
      },
    },
    (req) => roles.create(envOf(req), req.params, req.body),
  );
  app.get(
    one,
    {
      schema: {
        tags,
        summary: "Get a tenant role",
        params: RoleParams,
        response: { 200: RoleRead, ...errorResponses(404) },
      },
    },
    (req) => roles.get(envOf(req), req.params),
  );
  app.patch(
    one,
    {
      schema: {
        tags,
        summary: "Update a tenant role; each field given replaces the stored one",
        params: RoleParams,
        body: RoleUpdate,
        response: { 200: RoleRead, ...errorResponses(404) },
      },
    },
    (req) => roles.update(envOf(req), req.params, req.body),
  );
  app.delete(
    one,
    {
      schema: {
        tags,
        summary: "Delete a tenant role with its assignments",
        params: RoleParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await roles.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
  /** A change to the role's permissions or parents: the role as it is after. */
  const permissionsChange = (summary: string) => ({
    schema: {
      tags,
      summary,
      params: RoleParams,
      body: RolePermissionsBody,
      response: { 200: RoleRead, ...errorResponses(404) },
    },
  });
  const parentChange = (summary: string) => ({
    schema: { tags, summary, params: RoleParentParams, response: { 200: RoleRead, ...errorResponses(404) } },
  });
  app.post(
    `${one}/permissions`,
    permissionsChange('Grant "resource:action" permissions (already granted ones are skipped)'),
    (req) => roles.assignPermissions(envOf(req), req.params, req.body.permissions),
  );
  app.delete(
    `${one}/permissions`,
    permissionsChange('Revoke "resource:action" permissions (ones not granted are skipped)'),
    (req) => roles.removePermissions(envOf(req), req.params, req.body.permissions),
  );
  app.put(
    `${one}/parents/:parent_role_id`,
    parentChange("Make the role extend a parent role (inherit its permissions)"),
    (req) => roles.addParent(envOf(req), req.params),
  );
  app.delete(`${one}/parents/:parent_role_id`, parentChange("Stop the role extending a parent role"), (req) =>
    roles.removeParent(envOf(req), req.params),
  );
  const walks = {
    ancestors: "The roles this role extends, directly or through others",
    descendants: "The roles extending this role, directly or through others",
  } as const;
  for (const [walk, summary] of Object.entries(walks) as [keyof typeof walks, string][]) {
    app.get(
      `${one}/${walk}`,
      { schema: { tags, summary, params: RoleParams, response: { 200: RoleList, ...errorResponses(404) } } },
      (req) => roles[walk](envOf(req), req.params),
    );
  }
  app.put(
    "/v2/schema/:proj_id/:env_id/bulk/roles",
    {
      schema: {
        tags,
        summary: "Create or replace tenant roles and resource roles in one transaction",
        params: EnvParams,
        body: RoleCreateBulkOperation,
        response: { 200: RoleCreateBulkOperationResult, ...errorResponses(404) },
      },
    },
    (req) => roles.bulkReplace(envOf(req), req.params, req.body.operations),
  );
  app.post(
    "/v2/schema/:proj_id/:env_id/bulk/role_permissions",
    {
      schema: {
        tags,
        summary:
          "Grant and revoke permissions of many tenant and resource roles in one transaction, all or nothing (Gatehouse extension)",
        params: EnvParams,
        body: RolePermissionsBulk,
        response: { 200: RolePermissionsBulkResult, ...errorResponses(404) },
      },
    },
    (req) => roles.bulkPermissions(envOf(req), req.params, req.body.operations),
  );
};
