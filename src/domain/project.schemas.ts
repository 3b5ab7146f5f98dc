import { Type, type Static } from "typebox";
import { JsonObject, Key, Nullable, Uuid } from "../lib/schemas.ts";
import { NameInput, Stamps } from "../lib/schema-fields.ts";
import { EnvironmentCreate } from "./environment.schemas.ts";

/** The project's shapes that its records (project-records.ts) build and take; the module adds the rest. */

export const ProjectRead = Type.Object({
  id: Uuid,
  key: Type.String(),
  organization_id: Uuid,
  name: Type.String(),
  description: Type.Optional(Nullable(Type.String())),
  urn_namespace: Type.Optional(Nullable(Type.String())),
  settings: Type.Optional(JsonObject),
  active_policy_repo_id: Type.Optional(Nullable(Uuid)),
  ...Stamps,
});
export type ProjectRead = Static<typeof ProjectRead>;

export const ProjectCreate = Type.Object({
  key: Key(),
  ...NameInput,
  urn_namespace: Type.Optional(Type.String({ maxLength: 255 })),
  settings: Type.Optional(JsonObject),
  active_policy_repo_id: Type.Optional(Uuid),
  initial_environments: Type.Optional(
    Type.Array(EnvironmentCreate, {
      maxItems: 20,
      description: "environments to create with the project; default: production and development",
    }),
  ),
});
export type ProjectCreate = Static<typeof ProjectCreate>;
