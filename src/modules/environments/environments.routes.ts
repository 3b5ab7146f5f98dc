import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { envOf, principalOf, projectOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses, ProjectParams } from "../../lib/schemas.ts";
import {
  EnvironmentCreate,
  EnvironmentListQuery,
  EnvironmentRead,
  EnvironmentStats,
  EnvironmentUpdate,
} from "./environments.schemas.ts";
import { createEnvironmentsService } from "./environments.service.ts";

export const environmentsRoutes: FastifyPluginAsyncTypebox<
  Omit<Parameters<typeof createEnvironmentsService>[0], "onDeleted"> & {
    onEnvironmentDeleted(environmentId: string): void;
  }
> = async (app, deps) => {
  const environments = createEnvironmentsService({ ...deps, onDeleted: deps.onEnvironmentDeleted });
  const tags = ["environments"];
  app.get(
    "/v2/projects/:proj_id/envs",
    {
      schema: {
        tags,
        summary: "List the environments of a project",
        params: ProjectParams,
        querystring: EnvironmentListQuery,
        response: { 200: Type.Array(EnvironmentRead), ...errorResponses(404) },
      },
    },
    (req) => environments.list(principalOf(req), projectOf(req), pageRequest(req.query)),
  );
  app.post(
    "/v2/projects/:proj_id/envs",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Create an environment (with its default tenant and API key)",
        params: ProjectParams,
        body: EnvironmentCreate,
        response: { 200: EnvironmentRead, ...errorResponses(404, 409) },
      },
    },
    (req) => environments.create(projectOf(req), req.body),
  );
  app.get(
    "/v2/projects/:proj_id/envs/:env_id",
    {
      schema: {
        tags,
        summary: "Get an environment",
        params: EnvParams,
        response: { 200: EnvironmentRead, ...errorResponses(404) },
      },
    },
    (req) => environments.get(envOf(req)),
  );
  app.get(
    "/v2/projects/:proj_id/envs/:env_id/stats",
    {
      schema: {
        tags,
        summary: "Get an environment with its statistics",
        params: EnvParams,
        response: { 200: EnvironmentStats, ...errorResponses(404) },
      },
    },
    (req) => environments.stats(envOf(req)),
  );
  app.patch(
    "/v2/projects/:proj_id/envs/:env_id",
    {
      schema: {
        tags,
        summary: "Update an environment",
        params: EnvParams,
        body: EnvironmentUpdate,
        response: { 200: EnvironmentRead, ...errorResponses(404) },
      },
    },
    (req) => environments.update(envOf(req), req.body),
  );
  app.delete(
    "/v2/projects/:proj_id/envs/:env_id",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Delete an environment and everything in it",
        params: EnvParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await environments.remove(envOf(req));
      return reply.code(204).send(null);
    },
  );
};
