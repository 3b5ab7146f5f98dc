import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { Kysely } from "kysely";
import type { Config } from "../../config.ts";
import type { Database } from "../../db/types.ts";
import { errorResponses } from "../../lib/schemas.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { memberOf } from "../../plugins/auth.ts";
import { RecoveryCodes, TwoFactorCode, TwoFactorEnrolment, TwoFactorRead } from "./two-factor.schemas.ts";
import { createTwoFactorService } from "./two-factor.service.ts";
import { throttleDeps } from "./login-throttle.ts";

const tags = ["auth"];
/** The session's own routes; their bodies carry codes or secrets, so the API log keeps the call only. */
const SESSION = { auth: "session" } as const;
const SESSION_WITH_SECRET = { ...SESSION, apiLogBody: false } as const;

/** The member's own second factor (TOTP, RFC 6238) and recovery codes. */
export const twoFactorRoutes: FastifyPluginAsyncTypebox<{
  db: Kysely<Database>;
  box: SecretBox;
  config: Pick<Config, "loginFailuresPerAccount" | "loginFailuresPerAddress">;
}> = async (app, { db, box, config }) => {
  const service = (request: FastifyRequest) =>
    createTwoFactorService({
      db,
      box,
      ...throttleDeps(app.rateLimits.failures, config, request),
    });
  /** Responses that hold a secret or codes are not stored either. */
  const secretAnswer = (req: FastifyRequest) => {
    req.apiLogWithoutBodies = true;
  };

  app.get(
    "/v2/auth/two-factor",
    {
      config: SESSION,
      schema: {
        tags,
        summary: "Whether the member has a second factor, and whether the active organization requires one",
        response: { 200: TwoFactorRead, ...errorResponses() },
      },
    },
    (req) => service(req).get(memberOf(req)),
  );
  app.post(
    "/v2/auth/two-factor/enrol",
    {
      config: SESSION_WITH_SECRET,
      schema: {
        tags,
        summary: "Start enrolling a TOTP factor: its secret and QR code (confirm it with a code)",
        response: { 200: TwoFactorEnrolment, ...errorResponses(409) },
      },
    },
    (req) => {
      secretAnswer(req);
      return service(req).enrol(memberOf(req));
    },
  );
  app.post(
    "/v2/auth/two-factor/confirm",
    {
      config: SESSION_WITH_SECRET,
      schema: {
        tags,
        summary: "Confirm the enrolment with a code of the app: returns ten recovery codes, once",
        body: TwoFactorCode,
        response: { 200: RecoveryCodes, ...errorResponses(409, 429) },
      },
    },
    (req) => {
      secretAnswer(req);
      return service(req).confirm(memberOf(req), req.body, req.ip);
    },
  );
  app.delete(
    "/v2/auth/two-factor",
    {
      config: SESSION_WITH_SECRET,
      schema: {
        tags,
        summary: "Remove the member's second factor, proven by a code of it or a recovery code",
        body: TwoFactorCode,
        response: { 204: Type.Null(), ...errorResponses(409, 429) },
      },
    },
    async (req, reply) => {
      await service(req).remove(memberOf(req), req.body, req.ip);
      return reply.code(204).send(null);
    },
  );
};
