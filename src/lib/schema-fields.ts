import { Type, type TSchema } from "typebox";
import { Description, JsonObject, Name, Paginated, Timestamp, Uuid } from "./schemas.ts";

/** Groups of fields that many read and write shapes share, spread into them in the order they list them. */

/** The organization, project and environment an object of an environment lives in. */
export const EnvIds = { organization_id: Uuid, project_id: Uuid, environment_id: Uuid };
/** When an object was created and last changed. */
export const Stamps = { created_at: Timestamp, updated_at: Timestamp };
/** The head of a named object's read shape. */
export const NamedHead = {
  id: Uuid,
  key: Type.String(),
  name: Type.String(),
  description: Type.Optional(Type.String()),
};
/** The name and description of a named object being created. */
export const NameInput = { name: Name, description: Type.Optional(Description) };
/** What a client may change of a named object that has attributes. */
export const NamedUpdate = {
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  attributes: Type.Optional(JsonObject),
};

export const IncludeTotalCount = Type.Optional(Type.Boolean({ default: false }));

/** A fact list's answer: a plain array, or with include_total_count=true the paginated envelope. */
export const ArrayOrPage = <T extends TSchema>(item: T) =>
  Type.Union([Type.Array(item), Paginated(item)], {
    description: "a plain array, or the paginated envelope with include_total_count=true",
  });

/** The switches of a fact list whose shape follows detailed x include_total_count. */
export const ListShapeQuery = {
  detailed: Type.Optional(Type.Boolean({ default: false })),
  include_total_count: IncludeTotalCount,
};
