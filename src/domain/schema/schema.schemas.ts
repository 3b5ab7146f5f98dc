import { Type, type Static, type TSchema } from "typebox";
import {
  Description,
  EnvParams,
  JsonObject,
  KEY_PATTERN,
  Name,
  PageQuery,
  Ref,
  Uuid,
} from "../../lib/schemas.ts";

/** TypeBox pieces shared by the schema modules (/v2/schema/{proj_id}/{env_id}/...). */

export const ResourceParams = Type.Object({
  ...EnvParams.properties,
  resource_id: Ref("resource id or key"),
});

export const ListQuery = Type.Object(PageQuery);

/**
 * A map keyed by object key. Keys are checked by the service (assertKeys), so a bad key gets a message that
 * names it rather than a generic "additional properties" error.
 */
export const KeyedMap = <T extends TSchema>(value: T, description: string) =>
  Type.Record(Type.String(), value, { description: `${description}; keys match ${KEY_PATTERN}` });

export const AttributeType = Type.Union(
  [
    Type.Literal("bool"),
    Type.Literal("number"),
    Type.Literal("string"),
    Type.Literal("time"),
    Type.Literal("array"),
    Type.Literal("json"),
    Type.Literal("object"),
    Type.Literal("object_array"),
  ],
  { description: "supported attribute primitives" },
);

export const PermissionList = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 1000 });
export const RoleKeyList = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 1000 });

export const DerivationSettings = Type.Object({
  no_direct_roles_on_object: Type.Optional(
    Type.Boolean({
      description: "the rule does not apply to users with a direct role assignment on the object instance",
    }),
  ),
});
export type DerivationSettings = Static<typeof DerivationSettings>;

export const DerivedRoleRuleCreate = Type.Object({
  role: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "role (id or key) on the subject resource",
  }),
  on_resource: Type.String({ minLength: 1, maxLength: 512, description: "subject resource (id or key)" }),
  linked_by_relation: Type.String({
    minLength: 1,
    maxLength: 512,
    description: "relation (id or key) of this role's resource whose subject is on_resource",
  }),
  when: Type.Optional(DerivationSettings),
});
export type DerivedRoleRuleCreate = Static<typeof DerivedRoleRuleCreate>;

export const DerivedRoleRuleRead = Type.Object({
  role_id: Uuid,
  resource_id: Uuid,
  relation_id: Uuid,
  role: Type.String(),
  on_resource: Type.String(),
  linked_by_relation: Type.String(),
  when: DerivationSettings,
});
export type DerivedRoleRuleRead = Static<typeof DerivedRoleRuleRead>;

export const DerivedRoleBlockEdit = Type.Object({
  when: Type.Optional(DerivationSettings),
  users_with_role: Type.Optional(Type.Array(DerivedRoleRuleCreate, { maxItems: 1000 })),
});
export type DerivedRoleBlockEdit = Static<typeof DerivedRoleBlockEdit>;

export const DerivedRoleBlockRead = Type.Object({
  id: Uuid,
  when: DerivationSettings,
  users_with_role: Type.Array(DerivedRoleRuleRead),
});

/** The editable fields of a role, tenant-level or resource-level. */
export const RoleFields = {
  name: Name,
  description: Type.Optional(Description),
  permissions: Type.Optional(PermissionList),
  attributes: Type.Optional(JsonObject),
  extends: Type.Optional(RoleKeyList),
  granted_to: Type.Optional(DerivedRoleBlockEdit),
};

export const RoleBlockEditable = Type.Object(RoleFields);
export type RoleBlockEditable = Static<typeof RoleBlockEditable>;

/** Path parameters as the routes receive them; services take them whole. */
export type EnvPath = Static<typeof EnvParams>;
export type ResourcePath = Static<typeof ResourceParams>;
