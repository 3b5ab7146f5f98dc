import { Type, type Static } from "typebox";
import { Description, JsonObject, Name, PageQuery } from "../../lib/schemas.ts";
import { EnvironmentRead } from "../../domain/environment.schemas.ts";

export { EnvironmentCreate, EnvironmentRead } from "../../domain/environment.schemas.ts";

export const EnvironmentUpdate = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  custom_branch_name: Type.Optional(Type.String({ maxLength: 255 })),
  jwks: Type.Optional(JsonObject),
  settings: Type.Optional(JsonObject),
});
export type EnvironmentUpdate = Static<typeof EnvironmentUpdate>;

export const EnvironmentListQuery = Type.Object(PageQuery);

/** Permit's EnvironmentStatistics; `members` and `mau` are what Gatehouse can say (see docs/compatibility.md). */
export const EnvironmentStatistics = Type.Object({
  roles: Type.Integer({ minimum: 0, description: "tenant and resource roles" }),
  users: Type.Integer({ minimum: 0 }),
  policies: Type.Integer({ minimum: 0, description: "permissions granted to roles" }),
  resources: Type.Integer({ minimum: 0, description: "resource types, built-in ones left out" }),
  tenants: Type.Integer({ minimum: 0 }),
  has_decision_logs: Type.Boolean(),
  members: Type.Array(JsonObject, { description: "always empty: members are listed at /v2/members" }),
  mau: Type.Integer({ minimum: 0, description: "always 0: Gatehouse does not count monthly active users" }),
});

/** Permit's EnvironmentStats: the environment, its PDP configs (Gatehouse has none) and its statistics. */
export const EnvironmentStats = Type.Object({
  ...EnvironmentRead.properties,
  pdp_configs: Type.Array(JsonObject, { description: "always empty: Gatehouse has no PDP configs" }),
  stats: EnvironmentStatistics,
});
export type EnvironmentStats = Static<typeof EnvironmentStats>;
