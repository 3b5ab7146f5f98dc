import type { Kysely } from "kysely";

/**
 * Indexes for the facts API's lists and filters, each starting with environment_id, so a filtered list reads only
 * its environment's rows (the single-column foreign-key indexes of 0002 exist for cascading deletes).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const index = (name: string, table: string, columns: string[]) =>
    db.schema.createIndex(name).on(table).columns(columns).execute();
  await index("role_assignments_env_instance_idx", "role_assignments", [
    "environment_id",
    "resource_instance_id",
  ]);
  await index("resource_instances_env_created_idx", "resource_instances", [
    "environment_id",
    "created_at",
    "id",
  ]);
  await index("relationship_tuples_env_tenant_idx", "relationship_tuples", ["environment_id", "tenant_id"]);
  await index("relationship_tuples_env_relation_idx", "relationship_tuples", [
    "environment_id",
    "relation_id",
  ]);
  await index("condition_set_rules_env_created_idx", "condition_set_rules", [
    "environment_id",
    "created_at",
    "id",
  ]);
}
