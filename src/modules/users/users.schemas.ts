import { Type, type Static } from "typebox";
import { EnvParams, JsonObject, PageQuery, Paginated, Ref } from "../../lib/schemas.ts";
import { Email, PersonName, UserCreate, UserRead } from "../../domain/facts/facts.schemas.ts";

export { USER_KEY_PATTERN, UserCreate, UserRead } from "../../domain/facts/facts.schemas.ts";

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
