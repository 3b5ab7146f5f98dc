import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, NamedHead, NamedUpdate, NameInput, Stamps } from "../../lib/schema-fields.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export const ActionGroupParams = Type.Object({
  ...ResourceParams.properties,
  action_group_id: Ref("action group id or key"),
});
export type ActionGroupPath = Static<typeof ActionGroupParams>;

const ActionKeys = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
  maxItems: 1000,
  description: "keys (or ids) of actions of the same resource",
});

export const ResourceActionGroupRead = Type.Object({
  ...NamedHead,
  attributes: Type.Optional(JsonObject),
  actions: Type.Array(Type.String()),
  ...EnvIds,
  resource_id: Uuid,
  ...Stamps,
});
export type ResourceActionGroupRead = Static<typeof ResourceActionGroupRead>;

export const ResourceActionGroupCreate = Type.Object({
  key: Key("action group key"),
  ...NameInput,
  attributes: Type.Optional(JsonObject),
  actions: Type.Optional(ActionKeys),
});
export type ResourceActionGroupCreate = Static<typeof ResourceActionGroupCreate>;

export const ResourceActionGroupUpdate = Type.Object({
  ...NamedUpdate,
  actions: Type.Optional(ActionKeys),
});
export type ResourceActionGroupUpdate = Static<typeof ResourceActionGroupUpdate>;
