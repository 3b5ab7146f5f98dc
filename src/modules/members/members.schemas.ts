import { Type, type Static } from "typebox";
import { JsonObject, Name, Nullable, PageQuery, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { Email, OnboardingStep } from "../../domain/member.schemas.ts";
import { AccessLevelSchema, ScopeLevelSchema } from "../api-keys/api-keys.schemas.ts";

/** Members, grants and invites in Permit's shapes (OrgMemberReadWithGrants, Permission, Invite*). */

export { Email, OnboardingStep } from "../../domain/member.schemas.ts";

export const Password = Type.String({ minLength: 1, maxLength: 256, description: "12 characters or more" });

export const Permission = Type.Object(
  {
    organization_id: Uuid,
    project_id: Type.Optional(Uuid),
    environment_id: Type.Optional(Uuid),
    object_type: ScopeLevelSchema,
    access_level: AccessLevelSchema,
    organization_key: Type.Optional(Type.String()),
    project_key: Type.Optional(Type.String()),
    environment_key: Type.Optional(Type.String()),
    organization_name: Type.Optional(Type.String()),
    project_name: Type.Optional(Type.String()),
    environment_name: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type Permission = Static<typeof Permission>;

/** In requests, the project and environment may also be named by key. */
export const PermissionInput = Type.Object(
  {
    organization_id: Uuid,
    project_id: Type.Optional(Ref("project id or key")),
    environment_id: Type.Optional(Ref("environment id or key")),
    object_type: ScopeLevelSchema,
    access_level: AccessLevelSchema,
    organization_key: Type.Optional(Ref("ignored")),
    project_key: Type.Optional(Ref("ignored")),
    environment_key: Type.Optional(Ref("ignored")),
    organization_name: Type.Optional(Ref("ignored")),
    project_name: Type.Optional(Ref("ignored")),
    environment_name: Type.Optional(Ref("ignored")),
  },
  { additionalProperties: false },
);
export type PermissionInput = Static<typeof PermissionInput>;

export const InviteStatus = Type.Union([
  Type.Literal("pending"),
  Type.Literal("accepted"),
  Type.Literal("failed"),
  Type.Literal("canceled"),
]);

export const InviteRead = Type.Object({
  member_id: Type.Optional(Uuid),
  email: Type.String(),
  role: AccessLevelSchema,
  id: Uuid,
  organization_id: Uuid,
  invite_code: Type.String({ description: "accept link: {public_url}/invite/{invite_code}" }),
  created_at: Timestamp,
  status: InviteStatus,
  failed_reason: Type.Optional(Type.String()),
  expires_at: Type.Optional({
    ...Timestamp,
    description: "when the accept link stops working (Gatehouse's own; not in Permit's InviteRead)",
  }),
});
export type InviteRead = Static<typeof InviteRead>;

export const OrgMemberReadWithGrants = Type.Object({
  id: Uuid,
  email: Type.String(),
  email_verified: Type.Boolean(),
  name: Type.Optional(Type.String()),
  given_name: Type.Optional(Type.String()),
  family_name: Type.Optional(Type.String()),
  is_superuser: Type.Boolean(),
  is_onboarding: Type.Boolean(),
  onboarding_step: OnboardingStep,
  created_at: Timestamp,
  last_login: Type.Optional(Timestamp),
  last_ip: Type.Optional(Type.String()),
  logins_count: Type.Optional(Type.Integer()),
  identities: Type.Array(JsonObject),
  settings: JsonObject,
  grants: Type.Array(Permission),
});
export type OrgMemberReadWithGrants = Static<typeof OrgMemberReadWithGrants>;

export const OrgMemberCreate = Type.Object(
  {
    id: Type.Optional(Uuid),
    email: Type.Optional(Email),
    permissions: Type.Array(PermissionInput, { maxItems: 100 }),
  },
  { additionalProperties: false },
);
export type OrgMemberCreate = Static<typeof OrgMemberCreate>;

export const OrgMemberRemovePermissions = Type.Object(
  { id: Uuid, permissions: Type.Array(PermissionInput, { maxItems: 100 }) },
  { additionalProperties: false },
);
export type OrgMemberRemovePermissions = Static<typeof OrgMemberRemovePermissions>;

export const OrgMemberUpdate = Type.Object(
  { settings: Type.Optional(JsonObject), onboarding_step: Type.Optional(OnboardingStep) },
  { additionalProperties: false },
);
export type OrgMemberUpdate = Static<typeof OrgMemberUpdate>;

/** What members change of themselves: their names (null clears one). */
export const OwnProfileUpdate = Type.Object(
  { given_name: Type.Optional(Nullable(Name)), family_name: Type.Optional(Nullable(Name)) },
  { additionalProperties: false },
);
export type OwnProfileUpdate = Static<typeof OwnProfileUpdate>;

export const MemberListQuery = Type.Object({
  project_id: Type.Optional(Ref("project id or key")),
  env_id: Type.Optional(Ref("environment id or key")),
  ...PageQuery,
});
export const InviterQuery = Type.Object({
  inviter_name: Type.Optional(Name),
  inviter_email: Type.Optional(Email),
});

export const MemberParams = Type.Object({ member_id: Ref("member id or e-mail") });
export const OrgRefParams = Type.Object({ org_id: Ref("organization id or key") });
export const InviteParams = Type.Object({ org_id: Ref("organization id or key"), invite_id: Uuid });

export const InviteCreate = Type.Object(
  { member_id: Type.Optional(Uuid), email: Email, role: Type.Optional(AccessLevelSchema) },
  { additionalProperties: false },
);
export type InviteCreate = Static<typeof InviteCreate>;

export const MultiInviteResult = Type.Object({
  success: Type.Array(InviteRead),
  failed: Type.Array(Type.Object({ email: Type.String(), reason: Type.String() })),
});
export type MultiInviteResult = Static<typeof MultiInviteResult>;
