import { Type } from "typebox";
import { PageQuery } from "../../lib/schemas.ts";

export {
  ResourceCreate,
  ResourceRead,
  ResourceReplace,
  ResourceUpdate,
} from "../../domain/schema/schema.schemas.ts";

export const ResourceListQuery = Type.Object({
  ...PageQuery,
  include_total_count: Type.Optional(Type.Boolean({ default: false })),
  include_built_in: Type.Optional(
    Type.Boolean({ default: false, description: "also list built-in resources" }),
  ),
  search: Type.Optional(Type.String({ maxLength: 255, description: "part of the key or name" })),
});
