import { Type, type Static } from "typebox";
import { EnvParams, JsonObject, Key, PageQuery, Ref } from "../../lib/schemas.ts";
import { EnvIds, IncludeTotalCount, NamedHead, Stamps } from "../../lib/schema-fields.ts";
import { PermissionList, RoleCreateBulk, RoleFields } from "../../domain/schema/schema.schemas.ts";

export { RoleCreateBulk } from "../../domain/schema/schema.schemas.ts";

export const RoleParams = Type.Object({ ...EnvParams.properties, role_id: Ref("role id or key") });

export type RolePath = Static<typeof RoleParams>;

export const RoleParentParams = Type.Object({
  ...RoleParams.properties,
  parent_role_id: Ref("id or key of the role to extend"),
});

export type RoleParentPath = Static<typeof RoleParentParams>;

export const RoleListQuery = Type.Object({
  ...PageQuery,
  include_total_count: IncludeTotalCount,
  search: Type.Optional(Type.String({ maxLength: 255, description: "part of the key or name" })),
});
export type RoleListQuery = Static<typeof RoleListQuery>;

/** A tenant-level role. */
export const RoleRead = Type.Object({
  ...NamedHead,
  permissions: Type.Array(Type.String(), { description: '"<resource key>:<action key>" strings' }),
  attributes: Type.Optional(JsonObject),
  extends: Type.Array(Type.String(), {
    description: "keys of the roles whose permissions this role inherits",
  }),
  ...EnvIds,
  ...Stamps,
});
export type RoleRead = Static<typeof RoleRead>;

export const RoleCreate = Type.Object({ key: Key("role key"), ...RoleFields });

export type RoleCreate = Static<typeof RoleCreate>;

export const RoleUpdate = Type.Partial(Type.Object(RoleFields));

export type RoleUpdate = Static<typeof RoleUpdate>;

export const RolePermissionsBody = Type.Object({ permissions: PermissionList });

export type RolePermissionsBody = Static<typeof RolePermissionsBody>;

export const RoleList = Type.Object({ roles: Type.Array(RoleRead) });

export const RoleCreateBulkOperation = Type.Object({
  operations: Type.Array(RoleCreateBulk, { maxItems: 1000 }),
});
export type RoleCreateBulkOperation = Static<typeof RoleCreateBulkOperation>;

export const RoleCreateBulkOperationResult = Type.Object({
  created: Type.Array(Type.String()),
  updated: Type.Array(Type.String()),
});
export type RoleCreateBulkOperationResult = Static<typeof RoleCreateBulkOperationResult>;

/** One role's permission changes in `POST /bulk/role_permissions` (a Gatehouse extension). */
export const RolePermissionChange = Type.Object({
  role: Ref("role id or key"),
  resource: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: "resource (id or key) of a resource role; absent for a tenant role",
    }),
  ),
  grant: Type.Optional(PermissionList),
  revoke: Type.Optional(PermissionList),
});
export type RolePermissionChange = Static<typeof RolePermissionChange>;

export const RolePermissionsBulk = Type.Object({
  operations: Type.Array(RolePermissionChange, { minItems: 1, maxItems: 1000 }),
});

export const RolePermissionsBulkResult = Type.Object({
  updated: Type.Array(Type.String(), {
    description: "the roles changed: tenant roles by key, resource roles as `resource:role`",
  }),
});
export type RolePermissionsBulkResult = Static<typeof RolePermissionsBulkResult>;
