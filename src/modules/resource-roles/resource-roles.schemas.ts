import { Type, type Static } from "typebox";
import { Key, Ref } from "../../lib/schemas.ts";
import { ResourceParams, ResourceRoleRead, RoleFields } from "../../domain/schema/schema.schemas.ts";

export { ResourceRoleRead } from "../../domain/schema/schema.schemas.ts";

export const ResourceRoleParams = Type.Object({
  ...ResourceParams.properties,
  role_id: Ref("role id or key"),
});

export type ResourceRolePath = Static<typeof ResourceRoleParams>;

export const ResourceRoleCreate = Type.Object({ key: Key("role key"), ...RoleFields });

export type ResourceRoleCreate = Static<typeof ResourceRoleCreate>;

export const ResourceRoleUpdate = Type.Partial(Type.Object(RoleFields));

export type ResourceRoleUpdate = Static<typeof ResourceRoleUpdate>;

export const ResourceRoleList = Type.Object({ roles: Type.Array(ResourceRoleRead) });
