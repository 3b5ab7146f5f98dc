import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import { principalOf } from "../../plugins/auth.ts";
import { errorResponses } from "../../lib/schemas.ts";
import {
  APIHistoryEventFullRead,
  APIHistoryPage,
  EventParams,
  HistoryQuery,
  HistoryStats,
  HistoryStatsQuery,
} from "./api-log.schemas.ts";
import { createApiLogService } from "./api-log.service.ts";

/** A bare string answered as JSON (`"..."`), as Permit does; Fastify would otherwise send it as text/plain. */
const jsonString = (reply: FastifyReply, body: string) =>
  reply.type("application/json").send(JSON.stringify(body));

export const apiLogRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createApiLogService>[0]> = async (
  app,
  deps,
) => {
  const history = createApiLogService(deps);
  const tags = ["history"];
  app.get(
    "/v2/history",
    {
      schema: {
        tags,
        summary: "The API log: calls to /v2, newest first (a project or environment key sees its own scope)",
        querystring: HistoryQuery,
        response: { 200: APIHistoryPage, ...errorResponses() },
      },
    },
    (req) => history.list(principalOf(req), req.query),
  );
  app.get(
    "/v2/history/stats",
    {
      schema: {
        tags,
        summary:
          "Calls per minute by status class (Gatehouse's own): the same filters as /v2/history, over at most a week",
        querystring: HistoryStatsQuery,
        response: { 200: HistoryStats, ...errorResponses() },
      },
    },
    (req) => history.stats(principalOf(req), req.query),
  );
  app.get(
    "/v2/history/:event_id",
    {
      schema: {
        tags,
        summary: "One recorded call with its request and response bodies",
        params: EventParams,
        response: { 200: APIHistoryEventFullRead, ...errorResponses(404) },
      },
    },
    (req) => history.get(principalOf(req), req.params.event_id),
  );
  app.get(
    "/v2/history/:event_id/request",
    {
      schema: {
        tags,
        summary: "The recorded request body, as a string (empty when the call had none)",
        params: EventParams,
        response: { 200: Type.String(), ...errorResponses(404) },
      },
    },
    async (req, reply) => jsonString(reply, await history.requestBody(principalOf(req), req.params.event_id)),
  );
  app.get(
    "/v2/history/:event_id/response",
    {
      schema: {
        tags,
        summary: "The recorded response body, as a string",
        params: EventParams,
        response: { 200: Type.String(), ...errorResponses(404) },
      },
    },
    async (req, reply) =>
      jsonString(reply, await history.responseBody(principalOf(req), req.params.event_id)),
  );
};
