import { Type, type Static } from "typebox";
import { Description, JsonObject, Key, Name, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export const ActionParams = Type.Object({ ...ResourceParams.properties, action_id: Ref("action id or key") });
export type ActionPath = Static<typeof ActionParams>;

export const ResourceActionRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  attributes: Type.Optional(JsonObject),
  permission_name: Type.String({ description: '"<resource key>:<action key>"' }),
  organization_id: Uuid,
  project_id: Uuid,
  environment_id: Uuid,
  resource_id: Uuid,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ResourceActionRead = Static<typeof ResourceActionRead>;

export const ResourceActionCreate = Type.Object({
  key: Key("action key"),
  name: Name,
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
});
export type ResourceActionCreate = Static<typeof ResourceActionCreate>;

export const ResourceActionUpdate = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
});
export type ResourceActionUpdate = Static<typeof ResourceActionUpdate>;

/** An action inside a resource body (ResourceCreate.actions): the key is the map key. */
export const ActionBlockEditable = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
});
export type ActionBlockEditable = Static<typeof ActionBlockEditable>;

export const ActionBlockRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
  attributes: Type.Optional(JsonObject),
});
