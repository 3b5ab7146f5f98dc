import { Type, type Static } from "typebox";
import { JsonObject, PageQuery, Ref, Uuid } from "../../lib/schemas.ts";
import { ArrayOrPage, EnvIds, ListShapeQuery, Stamps } from "../../lib/schema-fields.ts";

const InstanceBlock = Type.Object({
  key: Type.String(),
  tenant: Type.String(),
  resource: Type.String(),
  attributes: JsonObject,
});

export const RelationshipTupleRead = Type.Object({
  id: Uuid,
  subject: Type.String({ description: "`type:key`" }),
  relation: Type.String({ description: "relation key" }),
  object: Type.String({ description: "`type:key`" }),
  tenant: Type.String({ description: "tenant key" }),
  subject_id: Uuid,
  relation_id: Uuid,
  object_id: Uuid,
  tenant_id: Uuid,
  ...EnvIds,
  ...Stamps,
  subject_details: Type.Optional(InstanceBlock),
  relation_details: Type.Optional(Type.Object({ key: Type.String(), name: Type.String() })),
  object_details: Type.Optional(InstanceBlock),
  tenant_details: Type.Optional(
    Type.Object({ key: Type.String(), name: Type.String(), attributes: JsonObject }),
  ),
});
export type RelationshipTupleRead = Static<typeof RelationshipTupleRead>;

export const RelationshipTupleCreate = Type.Object({
  subject: Ref("subject instance: `type:key` or id"),
  relation: Ref("relation key or id, on the object's resource"),
  object: Ref("object instance: `type:key` or id"),
  tenant: Type.Optional(Ref("tenant id or key; missing instances are created in it")),
});
export type RelationshipTupleCreate = Static<typeof RelationshipTupleCreate>;

export const RelationshipTupleDelete = Type.Object({
  subject: Ref("subject instance: `type:key` or id"),
  relation: Ref("relation key or id"),
  object: Ref("object instance: `type:key` or id"),
});
export type RelationshipTupleDelete = Static<typeof RelationshipTupleDelete>;

const filters = {
  tenant: Type.Optional(Ref("tenant id or key")),
  subject: Type.Optional(Ref("subject instance: `type:key` or id")),
  relation: Type.Optional(Ref("relation key or id")),
  object: Type.Optional(Ref("object instance: `type:key` or id")),
  object_type: Type.Optional(Ref("object resource type id or key")),
  subject_type: Type.Optional(Ref("subject resource type id or key")),
  ...PageQuery,
};

export const RelationshipTupleListQuery = Type.Object({
  ...filters,
  ...ListShapeQuery,
});
export type RelationshipTupleListQuery = Static<typeof RelationshipTupleListQuery>;

export const RelationshipTupleDetailedQuery = Type.Object(filters);

export const RelationshipTupleList = ArrayOrPage(RelationshipTupleRead);

export const RelationshipTupleBulkCreate = Type.Object({
  operations: Type.Array(RelationshipTupleCreate, { maxItems: 1000 }),
});
export type RelationshipTupleBulkCreate = Static<typeof RelationshipTupleBulkCreate>;

export const RelationshipTupleBulkDelete = Type.Object({
  idents: Type.Array(RelationshipTupleDelete, { maxItems: 1000 }),
});
export type RelationshipTupleBulkDelete = Static<typeof RelationshipTupleBulkDelete>;

export const EmptyResult = Type.Object({}, { description: "bulk results are an empty object" });
