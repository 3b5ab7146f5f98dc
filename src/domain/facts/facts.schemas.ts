import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { EnvIds, NameInput, Stamps } from "../../lib/schema-fields.ts";

/** The facts' shapes that the records in this folder build and take; each module adds the rest of its own. */

export const TenantCreate = Type.Object({
  key: Key("URL-friendly tenant key"),
  ...NameInput,
  attributes: Type.Optional(JsonObject),
});
export type TenantCreate = Static<typeof TenantCreate>;

export const ResourceInstanceCreate = Type.Object({
  key: Key("instance key, unique within its resource type"),
  tenant: Ref("tenant id or key"),
  resource: Ref("resource type id or key"),
  attributes: Type.Optional(JsonObject),
});
export type ResourceInstanceCreate = Static<typeof ResourceInstanceCreate>;

/** When an assignment stops granting: a future ISO 8601 date-time with an offset. */
export const ExpiresAt = Type.String({
  format: "date-time",
  maxLength: 64,
  description:
    "ISO 8601 date-time with an offset, in the future: the assignment stops granting at that instant and is then deleted; absent: it never expires",
});

export const ExpiresAtRead = Type.Optional(
  Type.String({ format: "date-time", description: "when the assignment stops granting; absent: never" }),
);

export const RoleAssignmentRead = Type.Object({
  id: Uuid,
  user: Type.String({ description: "user key" }),
  role: Type.String({ description: "role key" }),
  tenant: Type.String({ description: "tenant key" }),
  resource_instance: Type.Optional(Type.String({ description: "`type:key`, for an instance role" })),
  resource_instance_id: Type.Optional(Uuid),
  user_id: Uuid,
  role_id: Uuid,
  tenant_id: Uuid,
  ...EnvIds,
  created_at: Timestamp,
  expires_at: ExpiresAtRead,
});
export type RoleAssignmentRead = Static<typeof RoleAssignmentRead>;

export const USER_KEY_PATTERN = "^[A-Za-z0-9|@+\\-\\._]+$";
export const Email = Type.String({ format: "email", maxLength: 320 });
export const PersonName = Type.String({ maxLength: 255 });

/** The bodies of a user's own role routes: an assignment but for its user, whom the path names. */
export const UserRoleCreate = Type.Object({
  role: Ref("role id or key"),
  tenant: Type.Optional(Ref("tenant id or key; taken from the instance for an instance role")),
  resource_instance: Type.Optional(Ref("instance id or `type:key`")),
  expires_at: Type.Optional(ExpiresAt),
});
export type UserRoleCreate = Static<typeof UserRoleCreate>;

export const UserInTenant = Type.Object({
  tenant: Type.String(),
  roles: Type.Array(Type.String(), { description: "tenant-level roles of the user in the tenant" }),
  status: Type.Union([Type.Literal("active"), Type.Literal("pending")]),
  resource_instance_roles: Type.Optional(
    Type.Array(
      Type.Object({ resource_instance: Type.String(), resource: Type.String(), role: Type.String() }),
      {
        description: "with include_resource_instance_roles=true",
      },
    ),
  ),
});

export const UserRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  ...EnvIds,
  email: Type.Optional(Type.String({ description: "absent when never set" })),
  first_name: Type.Optional(Type.String({ description: "absent when never set" })),
  last_name: Type.Optional(Type.String({ description: "absent when never set" })),
  attributes: JsonObject,
  associated_tenants: Type.Array(UserInTenant),
  roles: Type.Array(Type.Object({ role: Type.String(), tenant: Type.String() }), {
    description: "deprecated: the user's tenant-level roles",
  }),
  ...Stamps,
});
export type UserRead = Static<typeof UserRead>;

export const UserCreate = Type.Object({
  key: Type.String({ pattern: USER_KEY_PATTERN, minLength: 1, maxLength: 255 }),
  email: Type.Optional(Email),
  first_name: Type.Optional(PersonName),
  last_name: Type.Optional(PersonName),
  attributes: Type.Optional(JsonObject),
  role_assignments: Type.Optional(Type.Array(UserRoleCreate, { maxItems: 1000 })),
});
export type UserCreate = Static<typeof UserCreate>;
