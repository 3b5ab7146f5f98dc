import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { RoleAssignmentRead } from "../role-assignments/role-assignments.schemas.ts";
import {
  ReturnDeletedQuery,
  UserCreate,
  UserListQuery,
  UserPage,
  UserParams,
  UserRead,
  UserReplace,
  UserUpdate,
} from "./users.schemas.ts";
import { createUsersService } from "./users.service.ts";
import { UserRoleCreate, UserRoleRemove } from "../role-assignments/role-assignments.schemas.ts";

export const usersRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createUsersService>[0]> = async (
  app,
  deps,
) => {
  const users = createUsersService(deps);
  const tags = ["users"];
  const base = "/v2/facts/:proj_id/:env_id/users";
  app.get(
    base,
    {
      schema: {
        tags,
        summary: "List users (paginated)",
        params: EnvParams,
        querystring: UserListQuery,
        response: { 200: UserPage, ...errorResponses(404) },
      },
    },
    (req) => users.list(envOf(req), req.query, pageRequest(req.query)),
  );
  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Create a user, with its role assignments",
        params: EnvParams,
        body: UserCreate,
        response: { 201: UserRead, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const user = await users.create(envOf(req), req.body);
      return reply.code(201).send(user);
    },
  );
  app.get(
    `${base}/:user_id`,
    {
      schema: {
        tags,
        summary: "Get a user",
        params: UserParams,
        response: { 200: UserRead, ...errorResponses(404) },
      },
    },
    (req) => users.get(envOf(req), req.params.user_id),
  );
  app.put(
    `${base}/:user_id`,
    {
      schema: {
        tags,
        summary: "Create (201) or replace (200) a user",
        params: UserParams,
        body: UserReplace,
        response: { 200: UserRead, 201: UserRead, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const { user, created } = await users.replace(envOf(req), req.params.user_id, req.body);
      return reply.code(created ? 201 : 200).send(user);
    },
  );
  app.patch(
    `${base}/:user_id`,
    {
      schema: {
        tags,
        summary: "Update a user's profile fields",
        params: UserParams,
        body: UserUpdate,
        response: { 200: UserRead, ...errorResponses(404) },
      },
    },
    (req) => users.update(envOf(req), req.params.user_id, req.body),
  );
  app.delete(
    `${base}/:user_id`,
    {
      schema: {
        tags,
        summary: "Delete a user and its role assignments",
        params: UserParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await users.remove(envOf(req), req.params.user_id);
      return reply.code(204).send(null);
    },
  );
  app.post(
    `${base}/:user_id/roles`,
    {
      schema: {
        tags,
        summary: "Assign a role to the user",
        params: UserParams,
        body: UserRoleCreate,
        response: { 200: RoleAssignmentRead, ...errorResponses(404, 409) },
      },
    },
    (req) => users.assignRole(envOf(req), req.params.user_id, req.body),
  );
  app.delete(
    `${base}/:user_id/roles`,
    {
      schema: {
        tags,
        summary: "Unassign a role from the user (404 when not assigned)",
        params: UserParams,
        querystring: ReturnDeletedQuery,
        body: UserRoleRemove,
        response: { 200: RoleAssignmentRead, 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const removed = await users.unassignRole(envOf(req), req.params.user_id, req.body);
      return req.query.return_deleted ? removed : reply.code(204).send(null);
    },
  );
};
