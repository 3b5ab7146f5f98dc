import { Type, type Static } from "typebox";
import { Description, EnvParams, Key, PageQuery, Ref } from "../../lib/schemas.ts";
import { AttributeType, ResourceParams } from "../../domain/schema/schema.schemas.ts";

export {
  AttributeBlockEditable,
  AttributeBlockRead,
  ResourceAttributeRead,
} from "../../domain/schema/schema.schemas.ts";

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
