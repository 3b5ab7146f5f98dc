import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses } from "../../lib/schemas.ts";
import {
  DerivationSettings,
  DerivedRoleRuleCreate,
  DerivedRoleRuleRead,
  ListQuery,
  ResourceParams,
} from "../../domain/schema/schema.schemas.ts";
import { RolePermissionsBody } from "../roles/roles.schemas.ts";
import {
  ResourceRoleCreate,
  ResourceRoleList,
  ResourceRoleParams,
  ResourceRoleRead,
  ResourceRoleUpdate,
} from "./resource-roles.schemas.ts";
import { createResourceRolesService } from "./resource-roles.service.ts";

export const resourceRolesRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createResourceRolesService>[0]
> = async (app, deps) => {
  const resourceRoles = createResourceRolesService(deps);
  const tags = ["resource roles"];
  const base = "/v2/schema/:proj_id/:env_id/resources/:resource_id/roles";
  const one = `${base}/:role_id`;
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List the roles of a resource",
        params: ResourceParams,
        querystring: ListQuery,
        response: { 200: Type.Array(ResourceRoleRead), ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.list(envOf(req), req.params, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a resource role, with its permissions, extends and derivations",
        params: ResourceParams,
        body: ResourceRoleCreate,
        response: { 200: ResourceRoleRead, ...errorResponses(404, 409) },
      },
    },
    (req) => resourceRoles.create(envOf(req), req.params, req.body),
  );
  app.get(
    one,
    {
      schema: {
        tags,
        summary: "Get a resource role",
        params: ResourceRoleParams,
        response: { 200: ResourceRoleRead, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.get(envOf(req), req.params),
  );
  app.patch(
    one,
    {
      schema: {
        tags,
        summary: "Update a resource role; each field given replaces the stored one",
        params: ResourceRoleParams,
        body: ResourceRoleUpdate,
        response: { 200: ResourceRoleRead, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.update(envOf(req), req.params, req.body),
  );
  app.delete(
    one,
    {
      schema: {
        tags,
        summary: "Delete a resource role with its assignments and derivations",
        params: ResourceRoleParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await resourceRoles.remove(envOf(req), req.params);
      return reply.code(204).send(null);
    },
  );
  app.post(
    `${one}/permissions`,
    {
      schema: {
        tags,
        summary: "Grant actions of the resource to the role (already granted ones are skipped)",
        params: ResourceRoleParams,
        body: RolePermissionsBody,
        response: { 200: ResourceRoleRead, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.assignPermissions(envOf(req), req.params, req.body.permissions),
  );
  app.delete(
    `${one}/permissions`,
    {
      schema: {
        tags,
        summary: "Revoke actions from the role (ones not granted are skipped)",
        params: ResourceRoleParams,
        body: RolePermissionsBody,
        response: { 200: ResourceRoleRead, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.removePermissions(envOf(req), req.params, req.body.permissions),
  );
  app.get(
    `${one}/ancestors`,
    {
      schema: {
        tags,
        summary: "The roles this role extends, directly or through others",
        params: ResourceRoleParams,
        response: { 200: ResourceRoleList, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.ancestors(envOf(req), req.params),
  );
  app.get(
    `${one}/descendants`,
    {
      schema: {
        tags,
        summary: "The roles extending this role, directly or through others",
        params: ResourceRoleParams,
        response: { 200: ResourceRoleList, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.descendants(envOf(req), req.params),
  );
  app.post(
    `${one}/implicit_grants`,
    {
      schema: {
        tags,
        summary: "Derive this role from a role on a related resource",
        params: ResourceRoleParams,
        body: DerivedRoleRuleCreate,
        response: { 200: DerivedRoleRuleRead, ...errorResponses(404, 409) },
      },
    },
    (req) => resourceRoles.createImplicitGrant(envOf(req), req.params, req.body),
  );
  app.delete(
    `${one}/implicit_grants`,
    {
      schema: {
        tags,
        summary: "Delete a derivation of this role",
        params: ResourceRoleParams,
        body: DerivedRoleRuleCreate,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await resourceRoles.deleteImplicitGrant(envOf(req), req.params, req.body);
      return reply.code(204).send(null);
    },
  );
  app.put(
    `${one}/implicit_grants/conditions`,
    {
      schema: {
        tags,
        summary: "Set when the role's derivations apply (no_direct_roles_on_object)",
        params: ResourceRoleParams,
        body: DerivationSettings,
        response: { 200: DerivationSettings, ...errorResponses(404) },
      },
    },
    (req) => resourceRoles.updateImplicitGrantConditions(envOf(req), req.params, req.body),
  );
};
