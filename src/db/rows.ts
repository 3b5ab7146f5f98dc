import type { Selectable } from "kysely";
import type {
  ConditionSetsTable,
  RelationsTable,
  ResourceActionsTable,
  ResourcesTable,
  RolesTable,
} from "./types.ts";

/** Rows as selected, of the tables that both the facts and the schema lookups read. */
export type ResourceRow = Selectable<ResourcesTable>;
export type RoleRow = Selectable<RolesTable>;
export type ActionRow = Selectable<ResourceActionsTable>;
export type RelationRow = Selectable<RelationsTable>;
export type ConditionSetRow = Selectable<ConditionSetsTable>;
