import { Type, type Static } from "typebox";
import { Description, JsonObject, Key, Name, PageQuery, Uuid } from "../../lib/schemas.ts";
import { EnvIds, IncludeTotalCount, Stamps } from "../../lib/schema-fields.ts";
import { ActionBlockEditable, ActionBlockRead } from "../resource-actions/resource-actions.schemas.ts";
import {
  AttributeBlockEditable,
  AttributeBlockRead,
} from "../resource-attributes/resource-attributes.schemas.ts";
import { RelationBlockRead } from "../relations/relations.schemas.ts";
import { ResourceRoleRead } from "../resource-roles/resource-roles.schemas.ts";
import { KeyedMap, RoleBlockEditable } from "../../domain/schema/schema.schemas.ts";

export const ResourceListQuery = Type.Object({
  ...PageQuery,
  include_total_count: IncludeTotalCount,
  include_built_in: Type.Optional(
    Type.Boolean({ default: false, description: "also list built-in resources" }),
  ),
  search: Type.Optional(Type.String({ maxLength: 255, description: "part of the key or name" })),
});

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
