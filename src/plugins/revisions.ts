import fp from "fastify-plugin";
import type { FastifyInstance } from "fastify";
import { enterWriteContext, type WriteContext } from "../changes/context.ts";
import type { ChangeNotifier } from "../changes/feed.ts";

export const REVISION_HEADER = "x-gatehouse-revision";
const READ_YOUR_WRITES_BOUND_MS = 1000;

declare module "fastify" {
  interface FastifyRequest {
    writes: WriteContext | null;
  }
}

/**
 * After a successful write, the response carries the environment's new revision (a client can hand it to a
 * PDP check as a consistency token) and in-process listeners (the embedded PDP) are told at once.
 */
export const revisionsPlugin = fp(
  async (app: FastifyInstance, opts: { notifier: ChangeNotifier }) => {
    app.decorateRequest("writes", null);
    app.addHook("preHandler", async (request) => {
      request.writes = { revisions: new Map() };
      enterWriteContext(request.writes);
    });
    app.addHook("onSend", async (request, reply, payload) => {
      const revisions = request.writes?.revisions;
      if (!revisions || revisions.size === 0 || reply.statusCode >= 400) return payload;
      if (revisions.size === 1) void reply.header(REVISION_HEADER, String([...revisions.values()][0]));
      // The embedded PDP applies the change before the client hears of it, so a check made right after a write
      // sees it (bounded, so a slow catch-up never holds a write's response for long).
      const caughtUp = Promise.all(
        [...revisions].map(([id, revision]) => opts.notifier.notify(id, revision)),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        caughtUp,
        new Promise((resolve) => (timer = setTimeout(resolve, READ_YOUR_WRITES_BOUND_MS))),
      ]);
      clearTimeout(timer);
      return payload;
    });
  },
  { name: "revisions" },
);
