import fs from "node:fs";
import path from "node:path";
import fp from "fastify-plugin";
import fastifyStatic from "@fastify/static";
import type { FastifyReply, FastifyRequest } from "fastify";

/**
 * The dashboard (web/, built by `npm run build:web` into web/dist) served on the API's origin: its files at `/`,
 * and its page for any other GET outside /v2 that asks for HTML, so client routes (/setup/{token}, /invite/{code},
 * /o/{org}/...) load it too. It calls only the public API, with the member's session cookie.
 */
export function dashboardBuilt(dir: string): boolean {
  return fs.existsSync(path.join(dir, "index.html"));
}

export const dashboardPlugin = fp<{ dir: string }>(
  async (app, { dir }) => {
    await app.register(fastifyStatic, {
      root: dir,
      // Routes for the files present at start (the build's names are content hashes), not a catch-all route
      // that would answer paths under /v2.
      wildcard: false,
      index: false,
      // The build writes .br and .gz next to each file; a browser gets the compressed one.
      preCompressed: true,
      setHeaders: (reply, file) => {
        if (/\.html(\.gz|\.br)?$/.test(file)) {
          // its content security policy is every page's (src/plugins/security-headers.ts)
          reply.header("cache-control", "no-cache");
        } else if (file.includes(`${path.sep}assets${path.sep}`)) {
          reply.header("cache-control", "public, max-age=31536000, immutable");
        }
      },
    });
  },
  { name: "dashboard" },
);

/** The errors plugin's fallback: the dashboard's page for a browser's navigation to a client route. */
export function dashboardPage(request: FastifyRequest, reply: FastifyReply): boolean {
  const url = request.url;
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  if (url === "/v2" || url.startsWith("/v2/") || url.startsWith("/v2?")) return false;
  if (!(request.headers.accept ?? "").includes("text/html")) return false;
  void reply.sendFile("index.html");
  return true;
}
