import { Type, type Static } from "typebox";
import { Name, Nullable, Ref } from "../../lib/schemas.ts";
import { Email } from "../../domain/member.schemas.ts";
import { AccessLevelSchema } from "../../domain/api-key.schemas.ts";

const Domain = Type.String({
  minLength: 1,
  maxLength: 253,
  pattern: "^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$",
  description: "an e-mail domain, such as example.com",
});

const SsoFields = {
  provider_name: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'shown on the login page: "Sign in with <provider_name>"',
  }),
  issuer: Type.String({
    minLength: 1,
    maxLength: 512,
    description:
      "the OpenID provider's issuer URL (its /.well-known/openid-configuration is read); https, or http on a loopback address only",
  }),
  client_id: Type.String({ minLength: 1, maxLength: 256 }),
  allowed_domains: Type.Array(Domain, {
    maxItems: 50,
    description:
      "e-mail domains that may sign in; new people of these domains become members on first sign-in",
  }),
  new_member_access: AccessLevelSchema,
  require_sso: Type.Boolean({
    description:
      "refuse password logins (but for the break-glass admin) and password sessions in the organization",
  }),
  break_glass_email: Type.Optional(
    Nullable({
      ...Email,
      description: "an organization admin who may still log in with a password (required with require_sso)",
    }),
  ),
};

export const SsoSettingsWrite = Type.Object(
  {
    ...SsoFields,
    client_secret: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: "stored sealed and never returned; leave it out to keep the stored one",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SsoSettingsWrite = Static<typeof SsoSettingsWrite>;

export const LoginSettingsWrite = Type.Object(
  {
    require_two_factor: Type.Boolean({
      description: "password logins of members need a second factor (TOTP)",
    }),
    sso: Type.Optional(Nullable(SsoSettingsWrite)),
  },
  { additionalProperties: false },
);
export type LoginSettingsWrite = Static<typeof LoginSettingsWrite>;

export const LoginSettingsRead = Type.Object({
  require_two_factor: Type.Boolean(),
  sso: Nullable(
    Type.Object({
      ...SsoFields,
      provider_name: Name,
      break_glass_email: Nullable(Type.String()),
      redirect_uri: Type.String({ description: "register this redirect URI with the provider" }),
    }),
  ),
});
export type LoginSettingsRead = Static<typeof LoginSettingsRead>;

export const LoginSettingsParams = Type.Object({ org_id: Ref("organization id or key") });
