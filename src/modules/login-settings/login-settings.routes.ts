import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Config } from "../../config.ts";
import { principalOf } from "../../plugins/auth.ts";
import { errorResponses } from "../../lib/schemas.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { LoginSettingsParams, LoginSettingsRead, LoginSettingsWrite } from "./login-settings.schemas.ts";
import { createLoginSettingsService } from "./login-settings.service.ts";

const ORG_ADMIN = { need: { level: "org", access: "admin" } } as const;

/** An organization's single sign-on (OpenID Connect) and second-factor policy: its admins only. */
export const loginSettingsRoutes: FastifyPluginAsyncTypebox<{
  db: Kysely<Database>;
  box: SecretBox;
  config: Pick<Config, "publicUrl">;
}> = async (app, { db, box, config }) => {
  const service = createLoginSettingsService({ db, box, publicUrl: config.publicUrl });
  const tags = ["login settings"];
  app.get(
    "/v2/orgs/:org_id/login-settings",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary:
          "The organization's single sign-on provider and second-factor policy (the client secret is never returned)",
        params: LoginSettingsParams,
        response: { 200: LoginSettingsRead, ...errorResponses(404) },
      },
    },
    (req) => service.get(principalOf(req), req.params.org_id),
  );
  app.put(
    "/v2/orgs/:org_id/login-settings",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Set the organization's single sign-on provider (or none) and second-factor policy",
        params: LoginSettingsParams,
        body: LoginSettingsWrite,
        response: { 200: LoginSettingsRead, ...errorResponses(404) },
      },
    },
    (req) => service.put(principalOf(req), req.params.org_id, req.body),
  );
};
