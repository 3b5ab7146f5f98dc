import { Type, type Static } from "typebox";
import { JsonObject, Key, Uuid } from "../lib/schemas.ts";
import { NameInput, Stamps } from "../lib/schema-fields.ts";

/** The environment's shapes that its records (environment-records.ts) build and take; the module adds the rest. */

export const EnvironmentRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  organization_id: Uuid,
  project_id: Uuid,
  name: Type.String(),
  description: Type.String({ description: "empty string when unset" }),
  custom_branch_name: Type.String({ description: "empty string when unset" }),
  avp_policy_store_id: Type.String({ description: "empty string when unset" }),
  jwks: JsonObject,
  settings: JsonObject,
  ...Stamps,
});
export type EnvironmentRead = Static<typeof EnvironmentRead>;

export const EnvironmentCreate = Type.Object({
  key: Key(),
  ...NameInput,
  custom_branch_name: Type.Optional(Type.String({ maxLength: 255 })),
  jwks: Type.Optional(JsonObject),
  settings: Type.Optional(JsonObject),
});
export type EnvironmentCreate = Static<typeof EnvironmentCreate>;
