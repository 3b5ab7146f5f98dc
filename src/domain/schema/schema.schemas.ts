import { Type, type Static, type TSchema } from "typebox";
import {
  Description,
  EnvParams,
  JsonObject,
  Key,
  KEY_PATTERN,
  Name,
  PageQuery,
  Ref,
  Uuid,
} from "../../lib/schemas.ts";
import { EnvIds, NamedHead, NamedUpdate, Stamps } from "../../lib/schema-fields.ts";

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

export const ConditionSetType = Type.Union([Type.Literal("userset"), Type.Literal("resourceset")]);

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

/** The schema objects' shapes that the records in this folder build and take; each module adds the rest. */

export const ResourceActionRead = Type.Object({
  ...NamedHead,
  attributes: Type.Optional(JsonObject),
  permission_name: Type.String({ description: '"<resource key>:<action key>"' }),
  ...EnvIds,
  resource_id: Uuid,
  ...Stamps,
});
export type ResourceActionRead = Static<typeof ResourceActionRead>;

/** An action inside a resource body (ResourceCreate.actions): the key is the map key. */
export const ActionBlockEditable = Type.Object({
  ...NamedUpdate,
});
export type ActionBlockEditable = Static<typeof ActionBlockEditable>;

export const ActionBlockRead = Type.Object({
  ...NamedHead,
  attributes: Type.Optional(JsonObject),
});

export const ResourceAttributeRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  type: AttributeType,
  description: Type.Optional(Type.String()),
  resource_id: Uuid,
  resource_key: Type.String(),
  ...EnvIds,
  ...Stamps,
  built_in: Type.Boolean(),
});
export type ResourceAttributeRead = Static<typeof ResourceAttributeRead>;

/** An attribute inside a resource body (ResourceCreate.attributes): the key is the map key. */
export const AttributeBlockEditable = Type.Object({
  type: AttributeType,
  description: Type.Optional(Description),
});
export type AttributeBlockEditable = Static<typeof AttributeBlockEditable>;

export const AttributeBlockRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  type: AttributeType,
  description: Type.Optional(Type.String()),
});

export const RelationRead = Type.Object({
  ...NamedHead,
  subject_resource: Type.String({ description: "key of the subject resource" }),
  subject_resource_id: Uuid,
  object_resource: Type.String({ description: "key of the object resource (the one in the path)" }),
  object_resource_id: Uuid,
  ...EnvIds,
  ...Stamps,
});
export type RelationRead = Static<typeof RelationRead>;

/** A relation inside ResourceRead.relations: the key is the map key, `resource` is the subject. */
export const RelationBlockRead = Type.Object({
  resource_id: Uuid,
  resource: Type.String(),
  relation_name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
});

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

export const RoleCreateBulk = Type.Object({
  key: Key("role key"),
  ...RoleFields,
  resource: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: "resource (id or key) for a resource role" }),
  ),
});
export type RoleCreateBulk = Static<typeof RoleCreateBulk>;

export const ResourceRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  urn: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  type_attributes: Type.Optional(JsonObject),
  actions: Type.Record(Type.String(), ActionBlockRead, { description: "by action key" }),
  attributes: Type.Record(Type.String(), AttributeBlockRead, { description: "by attribute key" }),
  roles: Type.Record(Type.String(), ResourceRoleRead, { description: "by role key" }),
  relations: Type.Record(Type.String(), RelationBlockRead, {
    description: "by relation key; `resource` is the subject resource",
  }),
  action_groups: Type.Record(Type.String(), Type.Array(Type.String()), {
    description: "action group key -> action keys",
  }),
  ...EnvIds,
  ...Stamps,
});
export type ResourceRead = Static<typeof ResourceRead>;

const ResourceBlocks = {
  actions: KeyedMap(ActionBlockEditable, "actions by key"),
  attributes: Type.Optional(KeyedMap(AttributeBlockEditable, "attributes by key")),
  roles: Type.Optional(KeyedMap(RoleBlockEditable, "roles by key; permissions are action keys")),
  relations: Type.Optional(
    KeyedMap(Type.String({ minLength: 1, maxLength: 512 }), "relation key -> subject resource key"),
  ),
};

const ResourceFields = {
  name: Name,
  urn: Type.Optional(Type.String({ maxLength: 1024 })),
  description: Type.Optional(Description),
  type_attributes: Type.Optional(JsonObject),
  ...ResourceBlocks,
};

export const ResourceCreate = Type.Object({ key: Key("resource key"), ...ResourceFields });

export type ResourceCreate = Static<typeof ResourceCreate>;

/** The whole definition: blocks left out become empty, fields left out are cleared. */
export const ResourceReplace = Type.Object(ResourceFields);

export type ResourceReplace = Static<typeof ResourceReplace>;

/** Each field given replaces the stored one completely (a block given replaces the whole block). */
export const ResourceUpdate = Type.Partial(Type.Object(ResourceFields));

export type ResourceUpdate = Static<typeof ResourceUpdate>;
