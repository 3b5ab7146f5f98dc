import { Type, type Static } from "typebox";
import { Key, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, NamedHead, NameInput, Stamps } from "../../lib/schema-fields.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export const RelationParams = Type.Object({
  ...ResourceParams.properties,
  relation_id: Ref("relation id or key"),
});
export type RelationPath = Static<typeof RelationParams>;

export const RelationRead = Type.Object({
  ...NamedHead,
  subject_resource: Type.String({ description: "key of the subject resource" }),
  subject_resource_id: Uuid,
  object_resource: Type.String({ description: "key of the object resource (the one in the path)" }),
  object_resource_id: Uuid,
  ...EnvIds,
  ...Stamps,
});
export type RelationRead = Static<typeof RelationRead>;

export const RelationCreate = Type.Object({
  key: Key("relation key"),
  ...NameInput,
  subject_resource: Type.String({ minLength: 1, maxLength: 512, description: "subject resource id or key" }),
});
export type RelationCreate = Static<typeof RelationCreate>;

/** A relation inside ResourceRead.relations: the key is the map key, `resource` is the subject. */
export const RelationBlockRead = Type.Object({
  resource_id: Uuid,
  resource: Type.String(),
  relation_name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
});
