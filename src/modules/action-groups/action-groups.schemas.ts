import { Type, type Static } from "typebox";
import { Description, JsonObject, Key, Name, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
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
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  attributes: Type.Optional(JsonObject),
  actions: Type.Array(Type.String()),
  organization_id: Uuid,
  project_id: Uuid,
  environment_id: Uuid,
  resource_id: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ResourceActionGroupRead = Static<typeof ResourceActionGroupRead>;

export const ResourceActionGroupCreate = Type.Object({
  key: Key("action group key"),
  name: Name,
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
  actions: Type.Optional(ActionKeys),
});
export type ResourceActionGroupCreate = Static<typeof ResourceActionGroupCreate>;

export const ResourceActionGroupUpdate = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
  actions: Type.Optional(ActionKeys),
});
export type ResourceActionGroupUpdate = Static<typeof ResourceActionGroupUpdate>;
