import { Type, type Static } from "typebox";
import { EnvParams, JsonObject, Nullable, PageQuery, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { ArrayOrPage, EnvIds, IncludeTotalCount, NamedUpdate, Stamps } from "../../lib/schema-fields.ts";

export { TenantCreate } from "../../domain/facts/facts.schemas.ts";

export const TenantRead = Type.Object(
  {
    id: Uuid,
    key: Type.String(),
    ...EnvIds,
    name: Type.String(),
    description: Type.Optional(Type.String()),
    attributes: Nullable(JsonObject),
    ...Stamps,
    last_action_at: Timestamp,
  },
  { description: "`attributes` is null for a tenant created without attributes, as Permit's clients expect" },
);
export type TenantRead = Static<typeof TenantRead>;

export const TenantUpdate = Type.Object({
  ...NamedUpdate,
});
export type TenantUpdate = Static<typeof TenantUpdate>;

export const TenantListQuery = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 255, description: "text in the tenant's key or name" })),
  include_total_count: IncludeTotalCount,
  ...PageQuery,
});
export type TenantListQuery = Static<typeof TenantListQuery>;

export const TenantList = ArrayOrPage(TenantRead);

export const TenantParams = Type.Object({ ...EnvParams.properties, tenant_id: Ref("tenant id or key") });

export const TenantUserParams = Type.Object({ ...TenantParams.properties, user_id: Ref("user id or key") });

export const TenantUsersQuery = Type.Object({
  search: Type.Optional(
    Type.String({ maxLength: 255, description: "text in key, email, first or last name" }),
  ),
  role: Type.Optional(Type.String({ maxLength: 255, description: "users holding this role in the tenant" })),
  include_resource_instance_roles: Type.Optional(Type.Boolean({ default: false })),
  ...PageQuery,
});
export type TenantUsersQuery = Static<typeof TenantUsersQuery>;
