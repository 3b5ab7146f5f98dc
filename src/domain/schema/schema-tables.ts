import type { Database } from "../../db/types.ts";

/** An environment's schema tables (resources, their actions, attributes, groups, roles, relations), each row after what it refers to. */
export const SCHEMA_TABLES = [
  "resources",
  "resource_actions",
  "resource_attributes",
  "action_groups",
  "action_group_actions",
  "roles",
  "role_permissions",
  "role_extends",
  "relations",
  "role_derivations",
] as const satisfies readonly (keyof Database)[];
