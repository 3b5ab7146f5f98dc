import { Type, type Static } from "typebox";
import { PageQuery, Ref, Uuid } from "../../lib/schemas.ts";
import { EnvIds, Stamps } from "../../lib/schema-fields.ts";

export const ConditionSetRuleRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  user_set: Type.String({ description: "user set key" }),
  permission: Type.String({ description: "`resource:action`" }),
  resource_set: Type.String({ description: "resource set key" }),
  ...EnvIds,
  ...Stamps,
});
export type ConditionSetRuleRead = Static<typeof ConditionSetRuleRead>;

export const ConditionSetRuleCreate = Type.Object({
  user_set: Ref("user set key or id"),
  permission: Ref("`resource:action`"),
  resource_set: Ref("resource set key or id"),
  is_role: Type.Optional(Type.Boolean({ default: false, description: "not supported: must be false" })),
  is_resource: Type.Optional(Type.Boolean({ default: false, description: "not supported: must be false" })),
});
export type ConditionSetRuleCreate = Static<typeof ConditionSetRuleCreate>;

export const SetRuleListQuery = Type.Object({
  user_set: Type.Optional(Ref("user set key or id")),
  permission: Type.Optional(Ref("`resource:action`")),
  resource_set: Type.Optional(Ref("resource set key or id")),
  ...PageQuery,
});
export type SetRuleListQuery = Static<typeof SetRuleListQuery>;
