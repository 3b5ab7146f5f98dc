import { Type, type Static } from "typebox";
import { EnvParams, JsonObject, PageQuery, Paginated, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, Stamps } from "../../lib/schema-fields.ts";
import { UserRoleCreate } from "../role-assignments/role-assignments.schemas.ts";

export const USER_KEY_PATTERN = "^[A-Za-z0-9|@+\\-\\._]+$";
const Email = Type.String({ format: "email", maxLength: 320 });
const PersonName = Type.String({ maxLength: 255 });

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

export const UserUpdate = Type.Object({
  email: Type.Optional(Email),
  first_name: Type.Optional(PersonName),
  last_name: Type.Optional(PersonName),
  attributes: Type.Optional(JsonObject),
});
export type UserUpdate = Static<typeof UserUpdate>;

/** PUT sends the whole UserCreate; the key may be left out, the path names the user. */
export const UserReplace = Type.Object({
  ...UserCreate.properties,
  key: Type.Optional(UserCreate.properties.key),
});
export type UserReplace = Static<typeof UserReplace>;

export const SearchOperatorSchema = Type.Union(
  [Type.Literal("contains"), Type.Literal("startswith"), Type.Literal("endswith")],
  { default: "contains" },
);

export const UserListQuery = Type.Object({
  search: Type.Optional(
    Type.String({ maxLength: 255, description: "text in key, email, first or last name" }),
  ),
  search_operator: Type.Optional(SearchOperatorSchema),
  role: Type.Optional(
    Type.String({
      maxLength: 255,
      description: "users holding this role; an empty string: users without roles",
    }),
  ),
  include_resource_instance_roles: Type.Optional(Type.Boolean({ default: false })),
  ...PageQuery,
});
export type UserListQuery = Static<typeof UserListQuery>;

export const UserPage = Paginated(UserRead);

export const UserParams = Type.Object({ ...EnvParams.properties, user_id: Ref("user id or key") });

export const ReturnDeletedQuery = Type.Object({
  return_deleted: Type.Optional(Type.Boolean({ default: false })),
});
