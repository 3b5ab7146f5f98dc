import { Type, type Static } from "typebox";
import { JsonObject, Paginated, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";
import { EnvIds, ListShapeQuery } from "../../lib/schema-fields.ts";
import { ExpiresAtRead, RoleAssignmentRead, UserRoleCreate } from "../../domain/facts/facts.schemas.ts";

export { ExpiresAt, RoleAssignmentRead, UserRoleCreate } from "../../domain/facts/facts.schemas.ts";

export const RoleAssignmentDetailedRead = Type.Object({
  id: Uuid,
  role: Type.Object({
    id: Uuid,
    key: Type.String(),
    name: Type.String(),
    permissions: Type.Array(Type.String()),
  }),
  user: Type.Object({
    id: Uuid,
    key: Type.String(),
    email: Type.Optional(Type.String()),
    first_name: Type.Optional(Type.String()),
    last_name: Type.Optional(Type.String()),
    attributes: JsonObject,
  }),
  tenant: Type.Object({ id: Uuid, key: Type.String(), name: Type.String(), attributes: JsonObject }),
  resource_instance: Type.Optional(
    Type.Object({ id: Uuid, key: Type.String(), resource: Type.String(), attributes: JsonObject }),
  ),
  ...EnvIds,
  created_at: Timestamp,
  expires_at: ExpiresAtRead,
});
export type RoleAssignmentDetailedRead = Static<typeof RoleAssignmentDetailedRead>;

export const UserRoleRemove = Type.Object({
  role: Ref("role id or key"),
  tenant: Type.Optional(Ref("tenant id or key; required for a tenant role")),
  resource_instance: Type.Optional(Ref("instance id or `type:key`")),
});
export type UserRoleRemove = Static<typeof UserRoleRemove>;

export const RoleAssignmentCreate = Type.Object({
  user: Ref("user id or key"),
  ...UserRoleCreate.properties,
});
export type RoleAssignmentCreate = Static<typeof RoleAssignmentCreate>;

export const RoleAssignmentRemove = Type.Object({
  user: Ref("user id or key"),
  ...UserRoleRemove.properties,
});
export type RoleAssignmentRemove = Static<typeof RoleAssignmentRemove>;

const Refs = (description: string) => Type.Optional(Type.Array(Ref(description), { maxItems: 100 }));

const filters = {
  user: Refs("user id or key (repeatable)"),
  role: Refs("role id or key (repeatable)"),
  tenant: Refs("tenant id or key (repeatable)"),
  resource: Type.Optional(Ref("resource type id or key: only roles on its instances")),
  resource_instance: Type.Optional(Ref("instance id or `type:key`")),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 30 })),
};

export const RoleAssignmentListQuery = Type.Object({
  ...filters,
  ...ListShapeQuery,
});
export type RoleAssignmentListQuery = Static<typeof RoleAssignmentListQuery>;

export const RoleAssignmentDetailedQuery = Type.Object(filters);

export const RoleAssignmentList = Type.Union(
  [
    Type.Array(RoleAssignmentRead),
    Type.Array(RoleAssignmentDetailedRead),
    Paginated(RoleAssignmentRead),
    Paginated(RoleAssignmentDetailedRead),
  ],
  { description: "the shape follows detailed x include_total_count" },
);

export const MissingUserPolicy = Type.Union(
  [Type.Literal("fail"), Type.Literal("ignore"), Type.Literal("create")],
  {
    default: "fail",
  },
);

export const BulkAssignQuery = Type.Object({ missing_user_policy: Type.Optional(MissingUserPolicy) });
export type BulkAssignQuery = Static<typeof BulkAssignQuery>;

export const BulkAssignBody = Type.Array(RoleAssignmentCreate, { maxItems: 1000 });
export const BulkUnassignBody = Type.Array(RoleAssignmentRemove, { maxItems: 1000 });
export const BulkAssignReport = Type.Object({ assignments_created: Type.Integer() });
export const BulkUnassignReport = Type.Object({ assignments_removed: Type.Integer() });
