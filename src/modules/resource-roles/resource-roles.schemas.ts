import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, NamedHead, Stamps } from "../../lib/schema-fields.ts";
import { DerivedRoleBlockRead, ResourceParams, RoleFields } from "../../domain/schema/schema.schemas.ts";

export const ResourceRoleParams = Type.Object({
  ...ResourceParams.properties,
  role_id: Ref("role id or key"),
});
export type ResourceRolePath = Static<typeof ResourceRoleParams>;

export const ResourceRoleRead = Type.Object({
  ...NamedHead,
  permissions: Type.Array(Type.String(), { description: "action keys of the role's resource" }),
  attributes: Type.Optional(JsonObject),
  extends: Type.Array(Type.String(), {
    description: "keys of roles of the same resource this role inherits",
  }),
  granted_to: DerivedRoleBlockRead,
  ...EnvIds,
  resource_id: Uuid,
  resource: Type.String({ description: "key of the role's resource" }),
  ...Stamps,
});
export type ResourceRoleRead = Static<typeof ResourceRoleRead>;

export const ResourceRoleCreate = Type.Object({ key: Key("role key"), ...RoleFields });
export type ResourceRoleCreate = Static<typeof ResourceRoleCreate>;

export const ResourceRoleUpdate = Type.Partial(Type.Object(RoleFields));
export type ResourceRoleUpdate = Static<typeof ResourceRoleUpdate>;

export const ResourceRoleList = Type.Object({ roles: Type.Array(ResourceRoleRead) });
