import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { EnvironmentRead } from "../environments/environments.schemas.ts";
import { TaskPathParams, WaitQuery } from "../../tasks/tasks.schemas.ts";
import { CopyTaskRecord, EnvironmentCopy } from "./environment-copy.schemas.ts";
import { createEnvironmentCopyService } from "./environment-copy.service.ts";

export const environmentCopyRoutes: FastifyPluginAsyncTypebox<
  Omit<Parameters<typeof createEnvironmentCopyService>[0], "tasks">
> = async (app, deps) => {
  const environmentCopy = createEnvironmentCopyService({ ...deps, tasks: app.tasks });
  app.tasks.registry.register("environment_copy", environmentCopy.handler);
  const tags = ["environments"];
  app.post(
    "/v2/projects/:proj_id/envs/:env_id/copy",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Copy the environment's policy into a new or an existing environment (synchronous)",
        params: EnvParams,
        body: EnvironmentCopy,
        response: { 201: EnvironmentRead, ...errorResponses(404, 409) },
      },
    },
    async (req, reply) => {
      const target = await environmentCopy.copy(envOf(req), req.body);
      return reply.code(201).send(target);
    },
  );
  app.post(
    "/v2/projects/:proj_id/envs/:env_id/copy/async",
    {
      config: { need: { level: "project", access: "write" } },
      schema: {
        tags,
        summary: "Copy the environment's policy as a background task",
        description:
          "Answers 202 with the task (status processing). With `wait`, the answer comes as soon as the task " +
          "finishes (200 with the finished task) or after `wait` seconds (202, still processing).",
        params: EnvParams,
        querystring: WaitQuery,
        body: EnvironmentCopy,
        response: { 200: CopyTaskRecord, 202: CopyTaskRecord, ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      const { finished, record } = await environmentCopy.copyAsync(envOf(req), req.body, req.query.wait ?? 0);
      return reply.code(finished ? 200 : 202).send(record);
    },
  );
  app.get(
    "/v2/projects/:proj_id/envs/:env_id/copy/async/:task_id/result",
    {
      schema: {
        tags,
        summary: "Read an environment copy task (200 in every state)",
        params: TaskPathParams,
        querystring: WaitQuery,
        response: { 200: CopyTaskRecord, ...errorResponses(404) },
      },
    },
    (req) => environmentCopy.result(envOf(req), req.params.task_id, req.query.wait ?? 0),
  );
};
