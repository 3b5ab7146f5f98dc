import { Type, type Static } from "typebox";
import { EnvParams, JsonObject, PageQuery, Ref, Uuid } from "../../lib/schemas.ts";
import { ArrayOrPage, EnvIds, ListShapeQuery, Stamps } from "../../lib/schema-fields.ts";

export { ResourceInstanceCreate } from "../../domain/facts/facts.schemas.ts";

export const RelationshipBlock = Type.Object({
  subject: Type.String({ description: "`type:key`" }),
  relation: Type.String(),
  object: Type.String({ description: "`type:key`" }),
});

export const ResourceInstanceRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  tenant: Type.String({ description: "tenant key" }),
  resource: Type.String({ description: "resource type key" }),
  ...EnvIds,
  resource_id: Uuid,
  tenant_id: Uuid,
  attributes: JsonObject,
  relationships: Type.Optional(
    Type.Array(RelationshipBlock, { description: "with detailed=true: the tuples the instance is part of" }),
  ),
  ...Stamps,
});
export type ResourceInstanceRead = Static<typeof ResourceInstanceRead>;

export const ResourceInstanceUpdate = Type.Object({ attributes: Type.Optional(JsonObject) });
export type ResourceInstanceUpdate = Static<typeof ResourceInstanceUpdate>;

const filters = {
  tenant: Type.Optional(Ref("tenant id or key")),
  resource: Type.Optional(Ref("resource type id or key")),
  search: Type.Optional(Type.Array(Ref("instance key or id"), { maxItems: 100, description: "repeatable" })),
  ...PageQuery,
};

export const ResourceInstanceListQuery = Type.Object({
  ...filters,
  ...ListShapeQuery,
});
export type ResourceInstanceListQuery = Static<typeof ResourceInstanceListQuery>;

export const ResourceInstanceDetailedQuery = Type.Object(filters);

export const ResourceInstanceList = ArrayOrPage(ResourceInstanceRead);

export const InstanceParams = Type.Object({
  ...EnvParams.properties,
  instance_id: Ref("instance id, `type:key` (URL-encoded as type%3Akey) or an unambiguous key"),
});

export const InstanceGetQuery = Type.Object({ detailed: Type.Optional(Type.Boolean({ default: false })) });
