import fp from "fastify-plugin";
import helmet from "@fastify/helmet";

/**
 * The browser-facing headers of every answer of the API port (helmet): `nosniff`, no referrer, no framing (CSP
 * `frame-ancestors 'none'` and `X-Frame-Options: DENY`), and one content security policy for every page this
 * origin serves (the dashboard, /errors, /docs): only its own scripts; inline styles, which Mantine, Swagger UI
 * and the errors page use. JSON answers carry the policy too, so that one opened as a page runs
 * nothing. HSTS is left to whoever terminates TLS: the server itself speaks plain HTTP.
 */
export const securityHeadersPlugin = fp(
  async (app) => {
    await app.register(helmet, {
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", "data:"],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
          formAction: ["'self'"],
        },
      },
      frameguard: { action: "deny" },
      referrerPolicy: { policy: "no-referrer" },
      strictTransportSecurity: false,
    });
  },
  { name: "security-headers" },
);
