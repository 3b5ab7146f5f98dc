import { Type, type Static } from "typebox";
import { Description, JsonObject, Name, PageQuery, Uuid } from "../../lib/schemas.ts";

export { ProjectCreate, ProjectRead } from "../../domain/project.schemas.ts";

export const ProjectUpdate = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  settings: Type.Optional(JsonObject),
  active_policy_repo_id: Type.Optional(Uuid),
});
export type ProjectUpdate = Static<typeof ProjectUpdate>;

export const ProjectListQuery = Type.Object(PageQuery);
