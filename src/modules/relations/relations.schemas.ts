import { Type, type Static } from "typebox";
import { Key, Ref } from "../../lib/schemas.ts";
import { NameInput } from "../../lib/schema-fields.ts";
import { ResourceParams } from "../../domain/schema/schema.schemas.ts";

export { RelationBlockRead, RelationRead } from "../../domain/schema/schema.schemas.ts";

export const RelationParams = Type.Object({
  ...ResourceParams.properties,
  relation_id: Ref("relation id or key"),
});

export type RelationPath = Static<typeof RelationParams>;

export const RelationCreate = Type.Object({
  key: Key("relation key"),
  ...NameInput,
  subject_resource: Type.String({ minLength: 1, maxLength: 512, description: "subject resource id or key" }),
});
export type RelationCreate = Static<typeof RelationCreate>;
