import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { envOf } from "../../plugins/auth.ts";
import { errorResponses } from "../../lib/schemas.ts";
import { ChangesQuery, ChangesResponse, SnapshotHeaderLine, SyncParams } from "./pdp-sync.schemas.ts";
import { createPdpSyncService } from "./pdp-sync.service.ts";

export const pdpSyncRoutes: FastifyPluginAsyncTypebox<Parameters<typeof createPdpSyncService>[0]> = async (
  app,
  deps,
) => {
  const pdpSync = createPdpSyncService(deps);
  const tags = ["pdp sync"];
  app.get(
    "/v2/pdp-sync/:proj_id/:env_id/snapshot",
    {
      schema: {
        tags,
        summary: "The environment's whole data at one revision, for a standalone PDP, streamed as NDJSON",
        params: SyncParams,
        response: {
          200: {
            description:
              "NDJSON: this header line, a `policy` line, lines of facts of one kind each, then an `end` line",
            content: { "application/x-ndjson": { schema: SnapshotHeaderLine } },
          },
          ...errorResponses(404),
        },
      },
    },
    async (req, reply) => {
      const stream = await pdpSync.snapshot(envOf(req));
      // The schema documents the stream's first line; Fastify pipes a stream as it is, unserialized.
      return reply.type("application/x-ndjson").send(stream as never);
    },
  );
  app.get(
    "/v2/pdp-sync/:proj_id/:env_id/changes",
    {
      schema: {
        tags,
        summary:
          "The ordered changes after a revision; waits up to `wait` seconds for one (410: no longer kept, load the snapshot)",
        params: SyncParams,
        querystring: ChangesQuery,
        response: { 200: ChangesResponse, ...errorResponses(404, 410) },
      },
    },
    (req) => pdpSync.changes(envOf(req), req.query.after, req.query.wait ?? 0),
  );
};
