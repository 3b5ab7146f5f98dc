import { Type, type Static } from "typebox";
import { JsonObject, Key, Ref } from "../../lib/schemas.ts";
import { NamedUpdate, NameInput } from "../../lib/schema-fields.ts";
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
  ...NameInput,
  attributes: Type.Optional(JsonObject),
});
export type ResourceActionCreate = Static<typeof ResourceActionCreate>;

export const ResourceActionUpdate = Type.Object({
  ...NamedUpdate,
});
export type ResourceActionUpdate = Static<typeof ResourceActionUpdate>;
