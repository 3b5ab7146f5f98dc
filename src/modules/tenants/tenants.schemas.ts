import { Type, type Static } from "typebox";
import {
  Description,
  JsonObject,
  Name,
  Nullable,
  PageQuery,
  Paginated,
  Ref,
  Timestamp,
  Uuid,
} from "../../lib/schemas.ts";

export { TenantCreate } from "../../domain/facts/facts.schemas.ts";

export const TenantRead = Type.Object(
  {
    id: Uuid,
    key: Type.String(),
    organization_id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    name: Type.String(),
    description: Type.Optional(Type.String()),
    attributes: Nullable(JsonObject),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_action_at: Timestamp,
  },
  { description: "`attributes` is null for a tenant created without attributes, as Permit's clients expect" },
);
export type TenantRead = Static<typeof TenantRead>;

export const TenantUpdate = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
});
export type TenantUpdate = Static<typeof TenantUpdate>;

export const TenantListQuery = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 255, description: "text in the tenant's key or name" })),
  include_total_count: Type.Optional(Type.Boolean({ default: false })),
  ...PageQuery,
});
export type TenantListQuery = Static<typeof TenantListQuery>;

export const TenantList = Type.Union([Type.Array(TenantRead), Paginated(TenantRead)], {
  description: "a plain array, or the paginated envelope with include_total_count=true",
});

export const TenantParams = Type.Object({
  proj_id: Ref("project id or key"),
  env_id: Ref("environment id or key"),
  tenant_id: Ref("tenant id or key"),
});

export const TenantUserParams = Type.Object({
  proj_id: Ref("project id or key"),
  env_id: Ref("environment id or key"),
  tenant_id: Ref("tenant id or key"),
  user_id: Ref("user id or key"),
});

export const TenantUsersQuery = Type.Object({
  search: Type.Optional(
    Type.String({ maxLength: 255, description: "text in key, email, first or last name" }),
  ),
  role: Type.Optional(Type.String({ maxLength: 255, description: "users holding this role in the tenant" })),
  include_resource_instance_roles: Type.Optional(Type.Boolean({ default: false })),
  ...PageQuery,
});
export type TenantUsersQuery = Static<typeof TenantUsersQuery>;
