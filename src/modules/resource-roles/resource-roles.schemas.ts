import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { DerivedRoleBlockRead, ResourceParams, RoleFields } from "../../domain/schema/schema.schemas.ts";

export const ResourceRoleParams = Type.Object({
  ...ResourceParams.properties,
  role_id: Ref("role id or key"),
});
export type ResourceRolePath = Static<typeof ResourceRoleParams>;

export const ResourceRoleRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  permissions: Type.Array(Type.String(), { description: "action keys of the role's resource" }),
  attributes: Type.Optional(JsonObject),
  extends: Type.Array(Type.String(), {
    description: "keys of roles of the same resource this role inherits",
  }),
  granted_to: DerivedRoleBlockRead,
  organization_id: Uuid,
  project_id: Uuid,
  environment_id: Uuid,
  resource_id: Uuid,
  resource: Type.String({ description: "key of the role's resource" }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ResourceRoleRead = Static<typeof ResourceRoleRead>;

export const ResourceRoleCreate = Type.Object({ key: Key("role key"), ...RoleFields });
export type ResourceRoleCreate = Static<typeof ResourceRoleCreate>;

export const ResourceRoleUpdate = Type.Partial(Type.Object(RoleFields));
export type ResourceRoleUpdate = Static<typeof ResourceRoleUpdate>;

export const ResourceRoleList = Type.Object({ roles: Type.Array(ResourceRoleRead) });
