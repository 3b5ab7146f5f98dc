import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, NamedHead, NamedUpdate, NameInput, Stamps } from "../../lib/schema-fields.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export const ActionParams = Type.Object({ ...ResourceParams.properties, action_id: Ref("action id or key") });
export type ActionPath = Static<typeof ActionParams>;

export const ResourceActionRead = Type.Object({
  ...NamedHead,
  attributes: Type.Optional(JsonObject),
  permission_name: Type.String({ description: '"<resource key>:<action key>"' }),
  ...EnvIds,
  resource_id: Uuid,
  ...Stamps,
});
export type ResourceActionRead = Static<typeof ResourceActionRead>;

export const ResourceActionCreate = Type.Object({
  key: Key("action key"),
  ...NameInput,
  attributes: Type.Optional(JsonObject),
});
export type ResourceActionCreate = Static<typeof ResourceActionCreate>;

export const ResourceActionUpdate = Type.Object({
  ...NamedUpdate,
});
export type ResourceActionUpdate = Static<typeof ResourceActionUpdate>;

/** An action inside a resource body (ResourceCreate.actions): the key is the map key. */
export const ActionBlockEditable = Type.Object({
  ...NamedUpdate,
});
export type ActionBlockEditable = Static<typeof ActionBlockEditable>;

export const ActionBlockRead = Type.Object({
  ...NamedHead,
  attributes: Type.Optional(JsonObject),
});
