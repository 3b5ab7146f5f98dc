import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { UserCreate, UserPage, UserRead } from "../users/users.schemas.ts";
import {
  TenantCreate,
  TenantList,
  TenantListQuery,
  TenantParams,
  TenantRead,
  TenantUpdate,
  TenantUserParams,
  TenantUsersQuery,
} from "./tenants.schemas.ts";
import { createTenantsService } from "./tenants.service.ts";

export const tenantsRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createTenantsService>[0]> = async (
  app,
  deps,
) => {
  const tenants = createTenantsService(deps);
  const tags = ["tenants"];
  const base = "/v2/facts/:proj_id/:env_id/tenants";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List tenants: an array, or the paginated envelope with include_total_count=true",
        params: EnvParams,
        querystring: TenantListQuery,
        response: { 200: TenantList, ...errorResponses(404) },
      },
    },
    (req) => tenants.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a tenant",
        params: EnvParams,
        body: TenantCreate,
        response: { 201: TenantRead, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const tenant = await tenants.create(envOf(req), req.body);
      return reply.code(201).send(tenant);
    },
  );
  app.get(
    `${base}/:tenant_id`,
    {
      schema: {
        tags,
        summary: "Get a tenant",
        params: TenantParams,
        response: { 200: TenantRead, ...errorResponses(404) },
      },
    },
    (req) => tenants.get(envOf(req), req.params.tenant_id),
  );
  app.patch(
    `${base}/:tenant_id`,
    {
      schema: {
        tags,
        summary: "Update a tenant",
        params: TenantParams,
        body: TenantUpdate,
        response: { 200: TenantRead, ...errorResponses(404) },
      },
    },
    (req) => tenants.update(envOf(req), req.params.tenant_id, req.body),
  );
  app.delete(
    `${base}/:tenant_id`,
    {
      schema: {
        tags,
        summary: "Delete a tenant with its role assignments, instances and relationship tuples",
        params: TenantParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await tenants.remove(envOf(req), req.params.tenant_id);
      return reply.code(204).send(null);
    },
  );
  app.get(
    `${base}/:tenant_id/users`,
    {
      schema: {
        tags,
        summary: "List the users holding a role in the tenant (paginated)",
        params: TenantParams,
        querystring: TenantUsersQuery,
        response: { 200: UserPage, ...errorResponses(404) },
      },
    },
    (req) => tenants.listUsers(envOf(req), req.params.tenant_id, req.query, pageRequest(req.query)),
  );
  app.post(
    `${base}/:tenant_id/users`,
    {
      schema: {
        tags,
        summary: "Create (or update) a user and assign its role_assignments in the tenant",
        params: TenantParams,
        body: UserCreate,
        response: { 200: UserRead, ...errorResponses(404, 409) },
      },
    },
    (req) => tenants.addUser(envOf(req), req.params.tenant_id, req.body),
  );
  app.delete(
    `${base}/:tenant_id/users/:user_id`,
    {
      schema: {
        tags,
        summary: "Remove every role the user holds in the tenant",
        params: TenantUserParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await tenants.removeUser(envOf(req), req.params.tenant_id, req.params.user_id);
      return reply.code(204).send(null);
    },
  );
};
