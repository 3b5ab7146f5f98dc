import { Type, type Static } from "typebox";
import { Name, Nullable, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { Email, Password } from "../members/members.schemas.ts";

export const LoginBody = Type.Object(
  {
    email: Email,
    password: Password,
    totp_code: Type.Optional(
      Type.String({
        maxLength: 16,
        description: "the authenticator app's code, for a member with a second factor",
      }),
    ),
    recovery_code: Type.Optional(
      Type.String({
        maxLength: 32,
        description: "instead of totp_code: one of the member's recovery codes (once)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type LoginBody = Static<typeof LoginBody>;

const NewMemberFields = {
  password: Password,
  first_name: Type.Optional(Name),
  last_name: Type.Optional(Name),
};

export const AcceptInviteBody = Type.Object(
  { invite_code: Type.String({ minLength: 1, maxLength: 64 }), ...NewMemberFields },
  { additionalProperties: false },
);
export type AcceptInviteBody = Static<typeof AcceptInviteBody>;

export const SetupBody = Type.Object(
  { setup_token: Type.String({ minLength: 1, maxLength: 128 }), email: Email, ...NewMemberFields },
  { additionalProperties: false },
);
export type SetupBody = Static<typeof SetupBody>;

export const PasswordChange = Type.Object(
  { current_password: Password, new_password: Password },
  { additionalProperties: false },
);
export type PasswordChange = Static<typeof PasswordChange>;

export const ActiveOrganizationBody = Type.Object(
  { organization_id: Ref("organization id or key") },
  { additionalProperties: false },
);

export const SessionRead = Type.Object({
  member_id: Uuid,
  email: Type.String(),
  active_organization_id: Nullable(Uuid),
  organizations: Type.Array(Type.Object({ id: Uuid, key: Type.String(), name: Type.String() })),
  csrf_token: Type.String({ description: "send it as X-CSRF-Token with every write of this session" }),
  expires_at: Timestamp,
});
export type SessionRead = Static<typeof SessionRead>;

export const RegionsRead = Type.Object({
  region: Type.String({ description: "the region this deployment serves" }),
  regions: Type.Array(Type.Object({ region: Type.String(), api_url: Type.String() }), {
    description: "every region, this one included, with its public base URL",
  }),
});
