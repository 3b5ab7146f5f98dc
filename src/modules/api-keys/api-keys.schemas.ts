import { Type, type Static } from "typebox";
import { Name, PageQuery, Paginated, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { ProjectRead } from "../projects/projects.schemas.ts";
import { EnvironmentRead } from "../environments/environments.schemas.ts";
import { AccessLevelSchema, OwnerTypeSchema, ScopeLevelSchema } from "../../domain/api-key.schemas.ts";

export { AccessLevelSchema, OwnerTypeSchema, ScopeLevelSchema } from "../../domain/api-key.schemas.ts";

export const APIKeyScopeRead = Type.Object({
  organization_id: Uuid,
  project_id: Type.Optional(Uuid),
  environment_id: Type.Optional(Uuid),
});

export const APIKeyRead = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  project_id: Type.Optional(Uuid),
  environment_id: Type.Optional(Uuid),
  object_type: ScopeLevelSchema,
  access_level: AccessLevelSchema,
  owner_type: OwnerTypeSchema,
  name: Type.Optional(Type.String()),
  secret: Type.Optional(
    Type.String({ description: "shown on creation, rotation and to organization admins" }),
  ),
  created_at: Timestamp,
  last_used_at: Type.Optional({
    ...Timestamp,
    description: "the key's last use (API calls and PDP checks), recorded at most once a minute",
  }),
  created_by_member: Type.Optional(
    Type.Object(
      {
        id: Uuid,
        email: Type.String(),
        email_verified: Type.Boolean(),
        is_superuser: Type.Boolean(),
        is_onboarding: Type.Boolean(),
        onboarding_step: Type.String(),
        created_at: Timestamp,
        identities: Type.Array(Type.Object({})),
        settings: Type.Object({}),
      },
      { description: "the member whose session created the key (OrgMemberRead)" },
    ),
  ),
  created_by_key: Type.Optional(
    Type.Object(
      { id: Uuid, name: Type.Optional(Type.String()) },
      { description: "the API key whose call created the key (not in Permit's APIKeyRead)" },
    ),
  ),
  project: Type.Optional(ProjectRead),
  env: Type.Optional(EnvironmentRead),
});
export type APIKeyRead = Static<typeof APIKeyRead>;

export const APIKeyCreate = Type.Object({
  organization_id: Type.Optional(Uuid),
  project_id: Type.Optional(Ref("project id or key")),
  environment_id: Type.Optional(Ref("environment id or key")),
  object_type: Type.Optional(ScopeLevelSchema),
  access_level: Type.Optional(AccessLevelSchema),
  owner_type: Type.Optional(OwnerTypeSchema),
  name: Type.Optional(Name),
});
export type APIKeyCreate = Static<typeof APIKeyCreate>;

export const APIKeyListQuery = Type.Object({
  object_type: Type.Optional(ScopeLevelSchema),
  proj_id: Type.Optional(Ref("project id or key")),
  ...PageQuery,
});

export const APIKeyPage = Paginated(APIKeyRead);
export const KeyIdParams = Type.Object({ api_key_id: Uuid });
