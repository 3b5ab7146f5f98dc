import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf, projectOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses, ProjectParams } from "../../lib/schemas.ts";
import { ProjectCreate, ProjectListQuery, ProjectRead, ProjectUpdate } from "./projects.schemas.ts";
import { createProjectsService } from "./projects.service.ts";

export const projectsRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createProjectsService>[0]> = async (
  app,
  deps,
) => {
  const projects = createProjectsService(deps);
  const tags = ["projects"];
  app.get(
    "/v2/projects",
    {
      schema: {
        tags,
        summary: "List projects",
        querystring: ProjectListQuery,
        response: { 200: Type.Array(ProjectRead), ...errorResponses() },
      },
    },
    (req) => projects.list(principalOf(req), pageRequest(req.query)),
  );
  app.post(
    "/v2/projects",
    {
      config: { need: { level: "org", access: "write" } },
      schema: {
        tags,
        summary: "Create a project",
        body: ProjectCreate,
        response: { 200: ProjectRead, ...errorResponses(409) },
      },
    },
    (req) => projects.create(principalOf(req), req.body),
  );
  app.get(
    "/v2/projects/:proj_id",
    {
      schema: {
        tags,
        summary: "Get a project",
        params: ProjectParams,
        response: { 200: ProjectRead, ...errorResponses(404) },
      },
    },
    (req) => projects.get(projectOf(req)),
  );
  app.patch(
    "/v2/projects/:proj_id",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Update a project",
        params: ProjectParams,
        body: ProjectUpdate,
        response: { 200: ProjectRead, ...errorResponses(404) },
      },
    },
    (req) => projects.update(projectOf(req), req.body),
  );
  app.delete(
    "/v2/projects/:proj_id",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Delete a project and everything in it",
        params: ProjectParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await projects.remove(projectOf(req));
      return reply.code(204).send(null);
    },
  );
};
