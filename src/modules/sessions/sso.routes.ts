import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { Type } from "typebox";
import { sessionPrincipal } from "../../domain/session-records.ts";
import type { Database } from "../../db/types.ts";
import type { Config } from "../../config.ts";
import { AppError } from "../../lib/errors.ts";
import { ssoRedirectUri } from "../../lib/oidc-issuer.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { cookieValue } from "../../plugins/auth.ts";
import { createOidcClients } from "./oidc-client.ts";
import { createSsoService } from "./sso.service.ts";

const tags = ["auth"];
const PUBLIC = { auth: "public" } as const;
/** The sign-in's state, in the browser that started it: Lax, so the provider's redirect back carries it. */
const STATE_COOKIE = "gatehouse_sso";
const STATE_PATH = "/v2/auth/sso";
const publicErrors = (...codes: number[]) =>
  Object.fromEntries([401, 422, 429, ...codes].map((code) => [code, { $ref: "ErrorDetails#" }]));

const Redirect = (description: string) => Type.Null({ description: `${description} (the Location header)` });

/** Single sign-on: the providers for the login page, the start of a sign-in, the provider's redirect back. */
export const ssoRoutes: FastifyPluginAsyncTypebox<{
  db: Kysely<Database>;
  box: SecretBox;
  config: Pick<Config, "publicUrl" | "sessionIdleMinutes" | "sessionMaxHours">;
}> = async (app, { db, box, config }) => {
  const lifetime = { idleMs: config.sessionIdleMinutes * 60_000, maxMs: config.sessionMaxHours * 3_600_000 };
  const sso = createSsoService({
    db,
    clients: createOidcClients(box),
    lifetime,
    redirectUri: ssoRedirectUri(config.publicUrl),
  });
  const secure = config.publicUrl.startsWith("https:") ? "; Secure" : "";
  const stateCookie = (reply: FastifyReply, value: string, maxAge: number) =>
    reply.header(
      "set-cookie",
      `${STATE_COOKIE}=${value}; Path=${STATE_PATH}; HttpOnly; SameSite=Lax${secure}; Max-Age=${maxAge}`,
    );

  app.get(
    "/v2/auth/sso/providers",
    {
      config: PUBLIC,
      schema: {
        tags,
        summary: 'The organizations with single sign-on, for the login page\'s "Sign in with …" buttons',
        security: [],
        response: {
          200: Type.Array(
            Type.Object({
              organization_key: Type.String(),
              provider_name: Type.String(),
              login_url: Type.String({ description: "GET it in the browser to sign in" }),
            }),
          ),
          ...publicErrors(),
        },
      },
    },
    () => sso.providers(),
  );

  app.get(
    "/v2/auth/sso/:org_key/login",
    {
      config: PUBLIC,
      schema: {
        tags,
        summary: "Start a sign-in with the organization's OpenID provider: redirects the browser there",
        security: [],
        params: Type.Object({ org_key: Type.String({ minLength: 1, maxLength: 255 }) }),
        querystring: Type.Object({
          next: Type.Optional(Type.String({ maxLength: 512, description: "a dashboard path to land on" })),
        }),
        response: { 302: Redirect("to the provider's authorization endpoint"), ...publicErrors(404, 503) },
      },
    },
    async (req, reply) => {
      const { url, state } = await sso.start(req.params.org_key, req.query.next);
      stateCookie(reply, state, 600);
      return reply.redirect(url, 302);
    },
  );

  /**
   * The provider's redirect back. The code and state travel in the query, so the API log keeps the path only.
   * A browser (Accept: text/html) that is refused goes to the login page, which shows the message.
   */
  app.get(
    "/v2/auth/sso/callback",
    {
      config: { ...PUBLIC, apiLogQuery: false, apiLogBody: false },
      schema: {
        tags,
        summary:
          "The OpenID provider's redirect back: checks the answer and the ID token, logs in, goes to the dashboard",
        security: [],
        querystring: Type.Object(
          Object.fromEntries(
            ["code", "state", "iss", "error", "error_description", "session_state", "scope"].map((name) => [
              name,
              Type.Optional(Type.String({ maxLength: 4096 })),
            ]),
          ),
          { description: "the provider's authorization response (RFC 6749 section 4.1.2; RFC 9207 iss)" },
        ),
        response: {
          302: Redirect(
            "to the dashboard, logged in (or, for a browser that was refused, to the login page)",
          ),
          ...publicErrors(503),
        },
      },
    },
    async (req, reply) => {
      stateCookie(reply, "", 0);
      try {
        const done = await sso.callback(req.query, cookieValue(req.headers.cookie, STATE_COOKIE), req.ip);
        app.sessionCookie.set(reply, done.token, done.session.expires_at);
        req.principal = await sessionPrincipal(db, done.token, lifetime);
        return reply.redirect(done.next, 302);
      } catch (e) {
        if (!(e instanceof AppError) || !wantsHtml(req)) throw e;
        req.log.info({ error_code: e.code }, "single sign-on refused");
        return reply.redirect(`/login?sso_error=${encodeURIComponent(e.message)}`, 302);
      }
    },
  );
};

const wantsHtml = (req: FastifyRequest) => (req.headers.accept ?? "").includes("text/html");
