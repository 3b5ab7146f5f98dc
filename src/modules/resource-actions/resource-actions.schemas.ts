import { Type, type Static } from "typebox";
import { Description, JsonObject, Key, Name, Ref } from "../../lib/schemas.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export {
  ActionBlockEditable,
  ActionBlockRead,
  ResourceActionRead,
} from "../../domain/schema/schema.schemas.ts";

export const ActionParams = Type.Object({ ...ResourceParams.properties, action_id: Ref("action id or key") });

export type ActionPath = Static<typeof ActionParams>;

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
