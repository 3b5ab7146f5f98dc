import { Type, type Static } from "typebox";
import { Description, EnvParams, Key, PageQuery, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, Stamps } from "../../lib/schema-fields.ts";
import { AttributeType, ResourceParams } from "../../domain/schema/schema.schemas.ts";

export const AttributeParams = Type.Object({
  ...ResourceParams.properties,
  attribute_id: Ref("attribute id or key"),
});

export const UserAttributeParams = Type.Object({
  ...EnvParams.properties,
  attribute_id: Ref("attribute id or key"),
});

const UserResourceQuery = {
  resource_id: Type.Optional(
    Type.Literal("__user", { description: "the built-in user resource; the only one supported" }),
  ),
};
export const UserAttributeQuery = Type.Object(UserResourceQuery);
export const UserAttributeListQuery = Type.Object({ ...UserResourceQuery, ...PageQuery });

export const ResourceAttributeRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  type: AttributeType,
  description: Type.Optional(Type.String()),
  resource_id: Uuid,
  resource_key: Type.String(),
  ...EnvIds,
  ...Stamps,
  built_in: Type.Boolean(),
});
export type ResourceAttributeRead = Static<typeof ResourceAttributeRead>;

export const ResourceAttributeCreate = Type.Object({
  key: Key("attribute key"),
  type: AttributeType,
  description: Type.Optional(Description),
});
export type ResourceAttributeCreate = Static<typeof ResourceAttributeCreate>;

export const ResourceAttributeUpdate = Type.Object({
  type: Type.Optional(AttributeType),
  description: Type.Optional(Description),
});
export type ResourceAttributeUpdate = Static<typeof ResourceAttributeUpdate>;

/** An attribute inside a resource body (ResourceCreate.attributes): the key is the map key. */
export const AttributeBlockEditable = Type.Object({
  type: AttributeType,
  description: Type.Optional(Description),
});
export type AttributeBlockEditable = Static<typeof AttributeBlockEditable>;

export const AttributeBlockRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  type: AttributeType,
  description: Type.Optional(Type.String()),
});
