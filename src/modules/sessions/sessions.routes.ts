import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Kysely } from "kysely";
import type { Config } from "../../config.ts";
import type { Database } from "../../db/types.ts";
import { memberOf } from "../../plugins/auth.ts";
import { errorResponses } from "../../lib/schemas.ts";
import { schedulePeriodic } from "../../lib/periodic.ts";
import { purgeExpiredSessions, sessionPrincipal } from "../../domain/session-records.ts";
import {
  AcceptInviteBody,
  ActiveOrganizationBody,
  LoginBody,
  PasswordChange,
  SessionRead,
  SetupBody,
  RegionsRead,
} from "./sessions.schemas.ts";
import { createSessionsService, type Opened } from "./sessions.service.ts";
import { throttleDeps } from "./login-throttle.ts";
import { listRegions } from "../../lib/regions.ts";
import type { SecretBox } from "../../lib/secrets.ts";

const PUBLIC = { auth: "public" } as const;
const SESSION = { auth: "session" } as const;
/** Routes whose bodies carry a password or a one-time code: the API log keeps the call, never the body. */
const PUBLIC_WITH_SECRET = { ...PUBLIC, apiLogBody: false } as const;
const SESSION_WITH_SECRET = { ...SESSION, apiLogBody: false } as const;
const tags = ["auth"];
/** Public routes answer no 403 (no credential is checked). */
const publicErrors = (...codes: number[]) =>
  Object.fromEntries([401, 422, 429, ...codes].map((code) => [code, { $ref: "ErrorDetails#" }]));

/** Login, logout, the current session, the active organization, password change, invites accepted, first setup. */
export const sessionsRoutes: FastifyPluginAsyncTypebox<{
  db: Kysely<Database>;
  box: SecretBox;
  config: Pick<
    Config,
    | "sessionIdleMinutes"
    | "sessionMaxHours"
    | "loginFailuresPerAccount"
    | "loginFailuresPerAddress"
    | "region"
    | "regionUrls"
    | "publicUrl"
  >;
}> = async (app, { db, box, config }) => {
  const lifetime = { idleMs: config.sessionIdleMinutes * 60_000, maxMs: config.sessionMaxHours * 3_600_000 };
  const service = (request: FastifyRequest) =>
    createSessionsService({
      db,
      box,
      lifetime,
      ...throttleDeps(app.rateLimits.failures, config, request),
    });
  /** Sets the cookie; the API log records the call as the member it logged in. */
  const opened = async (req: FastifyRequest, reply: FastifyReply, { token, session }: Opened) => {
    app.sessionCookie.set(reply, token, session.expires_at);
    req.principal = await sessionPrincipal(db, token, lifetime);
    return session;
  };
  const tokenOf = (req: FastifyRequest) => req.sessionToken ?? "";
  // Ended sessions no longer authenticate anyone; their rows go every hour.
  schedulePeriodic(app, "session purge", 3_600_000, () => purgeExpiredSessions(db));

  app.get(
    "/v2/auth/regions",
    {
      config: PUBLIC,
      schema: {
        tags,
        summary:
          "This deployment's region and every region's base URL: a person logs in at their organization's",
        security: [],
        response: { 200: RegionsRead, ...publicErrors() },
      },
    },
    () => ({ region: config.region, regions: listRegions(config) }),
  );
  app.post(
    "/v2/auth/login",
    {
      config: PUBLIC_WITH_SECRET,
      schema: {
        tags,
        summary: "Log in with e-mail and password: sets the session cookie, returns the CSRF token",
        security: [],
        body: LoginBody,
        response: { 200: SessionRead, ...publicErrors() },
      },
    },
    async (req, reply) => opened(req, reply, await service(req).login(req.body, req.ip)),
  );
  app.post(
    "/v2/auth/logout",
    {
      config: SESSION,
      schema: {
        tags,
        summary: "End the calling session",
        response: { 204: Type.Null(), ...errorResponses() },
      },
    },
    async (req, reply) => {
      await service(req).logout(memberOf(req));
      app.sessionCookie.clear(reply);
      return reply.code(204).send(null);
    },
  );
  app.get(
    "/v2/auth/session",
    {
      config: SESSION,
      schema: {
        tags,
        summary: "The calling session: member, organizations, the active one, the CSRF token",
        response: { 200: SessionRead, ...errorResponses() },
      },
    },
    (req) => service(req).current(memberOf(req), tokenOf(req)),
  );
  app.put(
    "/v2/auth/session/organization",
    {
      config: SESSION,
      schema: {
        tags,
        summary: "Switch the session's active organization (one the member holds a grant in)",
        body: ActiveOrganizationBody,
        response: { 200: SessionRead, ...errorResponses(404) },
      },
    },
    (req) => service(req).switchOrganization(memberOf(req), req.body.organization_id, tokenOf(req)),
  );
  app.put(
    "/v2/auth/password",
    {
      config: SESSION_WITH_SECRET,
      schema: {
        tags,
        summary: "Change the member's password (its other sessions end)",
        body: PasswordChange,
        response: { 204: Type.Null(), ...errorResponses() },
      },
    },
    async (req, reply) => {
      await service(req).changePassword(memberOf(req), req.body, req.ip);
      return reply.code(204).send(null);
    },
  );
  app.post(
    "/v2/auth/invites/accept",
    {
      config: PUBLIC_WITH_SECRET,
      schema: {
        tags,
        summary: "Accept an invite (the code of {public_url}/invite/{invite_code}): set a password, log in",
        security: [],
        body: AcceptInviteBody,
        response: { 200: SessionRead, ...publicErrors(404, 409) },
      },
    },
    async (req, reply) => opened(req, reply, await service(req).acceptInvite(req.body, req.ip)),
  );
  app.post(
    "/v2/auth/setup",
    {
      config: PUBLIC_WITH_SECRET,
      schema: {
        tags,
        summary: "Redeem the first start's setup link ({public_url}/setup/{token}): create the owner, log in",
        security: [],
        body: SetupBody,
        response: { 200: SessionRead, ...publicErrors(404, 409) },
      },
    },
    async (req, reply) => opened(req, reply, await service(req).setup(req.body, req.ip)),
  );
};
