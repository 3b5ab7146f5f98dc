import type { Span } from "@opentelemetry/api";
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { tracing } from "../lib/tracing.ts";

/*
 * A span per HTTP request (the control plane's and the PDP's servers), named by method and route pattern, with the
 * route and status: never the path (the dashboard's /setup/{token} and /invite/{code} hold secrets), the query,
 * headers or bodies. Registered only while tracing is on (src/lib/tracing.ts).
 */
export const tracingPlugin = fp(
  async (app: FastifyInstance) => {
    const sdk = tracing;
    if (!sdk) return;
    const spans = new WeakMap<FastifyRequest, Span>();
    app.addHook("onRequest", (request, _reply, done) => {
      const route = request.routeOptions.url;
      const span = sdk.startRequest(route ? `${request.method} ${route}` : request.method, request.headers, {
        "http.request.method": request.method,
        ...(route && { "http.route": route }),
      });
      spans.set(request, span);
      // The rest of the request runs with its span active: statements and decisions become its children.
      sdk.within(span, done);
    });
    app.addHook("onResponse", (request, reply, done) => {
      const span = spans.get(request);
      if (span) sdk.end(span, { "http.response.status_code": reply.statusCode }, reply.statusCode >= 500);
      done();
    });
  },
  { name: "tracing" },
);
