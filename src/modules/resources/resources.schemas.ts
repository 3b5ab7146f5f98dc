import { Type } from "typebox";
import { PageQuery } from "../../lib/schemas.ts";
import { IncludeTotalCount } from "../../lib/schema-fields.ts";

export {
  ResourceCreate,
  ResourceRead,
  ResourceReplace,
  ResourceUpdate,
} from "../../domain/schema/schema.schemas.ts";

export const ResourceListQuery = Type.Object({
  ...PageQuery,
  include_total_count: IncludeTotalCount,
  include_built_in: Type.Optional(
    Type.Boolean({ default: false, description: "also list built-in resources" }),
  ),
  search: Type.Optional(Type.String({ maxLength: 255, description: "part of the key or name" })),
});
