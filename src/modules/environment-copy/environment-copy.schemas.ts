import { Type, type Static } from "typebox";
import { Ref } from "../../lib/schemas.ts";
import { EnvironmentCreate, EnvironmentRead } from "../environments/environments.schemas.ts";
import { TaskRecordOf } from "../../tasks/tasks.schemas.ts";

const Patterns = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
    maxItems: 1000,
    default: [],
    description: `${what} keys; \`*\` matches any run of characters`,
  });

export const EnvironmentCopyScopeFilters = Type.Object(
  {
    include: Type.Optional(Patterns("only these (empty: all)")),
    exclude: Type.Optional(Patterns("not these")),
  },
  { additionalProperties: false },
);
export type EnvironmentCopyScopeFilters = Static<typeof EnvironmentCopyScopeFilters>;

export const EnvironmentCopyScope = Type.Object(
  {
    resources: Type.Optional(EnvironmentCopyScopeFilters),
    roles: Type.Optional(EnvironmentCopyScopeFilters),
    user_sets: Type.Optional(EnvironmentCopyScopeFilters),
    resource_sets: Type.Optional(EnvironmentCopyScopeFilters),
    custom_policies: Type.Optional(EnvironmentCopyScopeFilters),
  },
  {
    additionalProperties: false,
    description:
      "what to copy: resources (with their actions, attributes, action groups, roles and relations), tenant roles, " +
      "user sets and resource sets; custom_policies is accepted and ignored (Gatehouse has no custom policies)",
  },
);
export type EnvironmentCopyScope = Static<typeof EnvironmentCopyScope>;

export const EnvironmentCopyTarget = Type.Object(
  {
    existing: Type.Optional(Ref("an environment of the same project (id or key) to copy into")),
    new: Type.Optional(EnvironmentCreate),
  },
  { additionalProperties: false, description: "exactly one of `new` and `existing`" },
);

export const ConflictStrategy = Type.Union([Type.Literal("fail"), Type.Literal("overwrite")], {
  default: "fail",
  description:
    "copying into an existing environment: `fail` when a resource, tenant role or condition set with the same key " +
    "is there (nothing is written), `overwrite` replaces those objects",
});

export const EnvironmentCopy = Type.Object(
  {
    target_env: EnvironmentCopyTarget,
    conflict_strategy: Type.Optional(ConflictStrategy),
    scope: Type.Optional(EnvironmentCopyScope),
  },
  { additionalProperties: false },
);
export type EnvironmentCopy = Static<typeof EnvironmentCopy>;

export const CopyTaskRecord = TaskRecordOf(EnvironmentRead);
