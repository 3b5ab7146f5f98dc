import fp from "fastify-plugin";
import type { FastifyInstance } from "fastify";
import { bearerToken } from "../lib/access.ts";
import { misdirectedKey, type Regions } from "../lib/regions.ts";

/**
 * A /v2 call with a key of another region is answered 421 `WRONG_REGION` with that region's base URL, before the
 * key is looked up and before the body is read (so it is recorded nowhere).
 */
export const regionPlugin = fp(
  async (app: FastifyInstance, regions: Regions) => {
    app.addHook("onRequest", async (request) => {
      if (!request.url.startsWith("/v2/") && request.url !== "/v2") return;
      const secret = bearerToken(request.headers.authorization);
      const misdirected = secret === undefined ? undefined : misdirectedKey(secret, regions);
      if (misdirected) throw misdirected;
    });
  },
  { name: "region" },
);
