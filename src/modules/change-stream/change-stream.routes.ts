import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { ServerResponse } from "node:http";
import { Type } from "typebox";
import { negotiate } from "@fastify/accept-negotiator";
import { envOf } from "../../plugins/auth.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import { invalid } from "../../lib/errors.ts";
import { ChangeStreamPage, ChangeStreamQuery } from "./change-stream.schemas.ts";
import { createChangeStreamService } from "./change-stream.service.ts";
import { purgeChanges } from "../../changes/retention.ts";
import { schedulePeriodic } from "../../lib/periodic.ts";
import type { Config } from "../../config.ts";
import type { DatabaseOutage } from "../../db/outage.ts";

const SSE = "text/event-stream";

/** How often the change feed's retention purge runs. */
const PURGE_INTERVAL_MS = 10 * 60_000;

export const changeStreamRoutes: FastifyPluginAsyncTypebox<
  Parameters<typeof createChangeStreamService>[0] & {
    config: Pick<Config, "changeRetentionDays" | "changeRetentionRevisions">;
    outage: DatabaseOutage;
  }
> = async (app, deps) => {
  const stream = createChangeStreamService(deps);
  const { config } = deps;
  schedulePeriodic(
    app,
    "change feed purge",
    PURGE_INTERVAL_MS,
    () =>
      purgeChanges(deps.db, {
        days: config.changeRetentionDays,
        minRevisions: config.changeRetentionRevisions,
      }),
    deps.outage,
  );
  // Open SSE streams end when their client goes, and all of them when the server closes (they never end alone).
  const open = new Set<ServerResponse>();
  app.addHook("preClose", async () => open.forEach((res) => res.socket?.destroy()));
  app.get(
    "/v2/facts/:proj_id/:env_id/changes",
    {
      schema: {
        tags: ["change stream"],
        summary:
          "The environment's changes after a revision: Server-Sent Events (Accept: text/event-stream) or a long poll (JSON)",
        params: EnvParams,
        querystring: ChangeStreamQuery,
        response: {
          200: {
            description:
              "JSON: a page of changes (call again with `after` = `revision`). SSE: one `revision` event per revision, `id` the revision, `data` {revision, changes}",
            content: {
              "application/json": { schema: ChangeStreamPage },
              [SSE]: { schema: Type.String({ description: "id: <revision>, event: revision, data: {...}" }) },
            },
          },
          ...errorResponses(404, 410),
        },
      },
    },
    async (req, reply) => {
      const scope = envOf(req);
      const wantsSse = negotiate(req.headers.accept ?? "application/json", ["application/json", SSE]) === SSE;
      if (!wantsSse) return reply.send(await stream.page(scope, req.query.after ?? 0, req.query.wait ?? 0));
      const lastEventId = req.headers["last-event-id"];
      let after = req.query.after;
      if (after === undefined && typeof lastEventId === "string" && lastEventId !== "") {
        if (!/^\d{1,15}$/.test(lastEventId)) throw invalid("Last-Event-ID must be a revision", ["header"]);
        after = Number(lastEventId);
      }
      await stream.checkAfter(scope, after ?? 0);
      const closed = new AbortController();
      open.add(reply.raw);
      reply.raw.once("close", () => closed.abort());
      const events = stream.stream(scope, after ?? 0, closed.signal);
      events.once("close", () => open.delete(reply.raw));
      // The schema documents the stream's events; Fastify pipes a stream as it is, unserialized.
      return reply
        .type(SSE)
        .header("cache-control", "no-cache")
        .header("x-accel-buffering", "no")
        .send(events as never);
    },
  );
};
