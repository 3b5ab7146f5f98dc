import { sql, type CreateTableBuilder, type Kysely } from "kysely";

/**
 * The environment-level data: schema (resources, actions, attributes, action groups, roles, relations,
 * derivations, condition sets) and facts (users, role assignments, instances, tuples, set rules).
 * Every unique constraint and lookup index starts with environment_id, so no query reads another environment's rows;
 * single-column indexes on foreign keys keep cascading deletes from scanning.
 */
type Table = CreateTableBuilder<string, never>;

const scoped = (t: Table): Table =>
  t
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organization_id", "text", (c) => c.notNull())
    .addColumn("project_id", "text", (c) => c.notNull())
    .addColumn("environment_id", "text", (c) =>
      c.notNull().references("environments.id").onDelete("cascade"),
    );

const stamped = (t: Table): Table =>
  t.addColumn("created_at", "text", (c) => c.notNull()).addColumn("updated_at", "text", (c) => c.notNull());

export async function up(db: Kysely<unknown>): Promise<void> {
  const index = (name: string, table: string, columns: string[]) =>
    db.schema.createIndex(name).on(table).columns(columns).execute();
  const unique = (name: string, table: string, columns: string[]) =>
    db.schema.createIndex(name).on(table).columns(columns).unique().execute();

  await stamped(
    scoped(db.schema.createTable("resources"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("urn", "text")
      .addColumn("type_attributes", "text")
      .addColumn("built_in", "integer", (c) => c.notNull().defaultTo(0)),
  ).execute();
  await unique("resources_env_key_uq", "resources", ["environment_id", "key"]);

  await stamped(
    scoped(db.schema.createTable("resource_actions"))
      .addColumn("resource_id", "text", (c) => c.notNull().references("resources.id").onDelete("cascade"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("attributes", "text"),
  ).execute();
  await unique("resource_actions_env_res_key_uq", "resource_actions", [
    "environment_id",
    "resource_id",
    "key",
  ]);
  await index("resource_actions_resource_idx", "resource_actions", ["resource_id"]);

  await stamped(
    scoped(db.schema.createTable("resource_attributes"))
      .addColumn("resource_id", "text", (c) => c.notNull().references("resources.id").onDelete("cascade"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("built_in", "integer", (c) => c.notNull().defaultTo(0)),
  ).execute();
  await unique("resource_attributes_env_res_key_uq", "resource_attributes", [
    "environment_id",
    "resource_id",
    "key",
  ]);
  await index("resource_attributes_resource_idx", "resource_attributes", ["resource_id"]);

  await stamped(
    scoped(db.schema.createTable("action_groups"))
      .addColumn("resource_id", "text", (c) => c.notNull().references("resources.id").onDelete("cascade"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("attributes", "text"),
  ).execute();
  await unique("action_groups_env_res_key_uq", "action_groups", ["environment_id", "resource_id", "key"]);
  await index("action_groups_resource_idx", "action_groups", ["resource_id"]);

  await db.schema
    .createTable("action_group_actions")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("action_group_id", "text", (c) =>
      c.notNull().references("action_groups.id").onDelete("cascade"),
    )
    .addColumn("action_id", "text", (c) => c.notNull().references("resource_actions.id").onDelete("cascade"))
    .addPrimaryKeyConstraint("action_group_actions_pk", ["action_group_id", "action_id"])
    .execute();
  await index("action_group_actions_env_idx", "action_group_actions", ["environment_id", "action_group_id"]);
  await index("action_group_actions_action_idx", "action_group_actions", ["action_id"]);

  // Tenant-level roles have resource_id null; resource roles name their resource.
  await stamped(
    scoped(db.schema.createTable("roles"))
      .addColumn("resource_id", "text", (c) => c.references("resources.id").onDelete("cascade"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("attributes", "text")
      .addColumn("no_direct_roles_on_object", "integer", (c) => c.notNull().defaultTo(0)),
  ).execute();
  await db.schema
    .createIndex("roles_env_tenant_key_uq")
    .on("roles")
    .columns(["environment_id", "key"])
    .unique()
    .where(sql.ref("resource_id"), "is", null)
    .execute();
  await unique("roles_env_res_key_uq", "roles", ["environment_id", "resource_id", "key"]);
  await index("roles_resource_idx", "roles", ["resource_id"]);

  await db.schema
    .createTable("role_permissions")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addColumn("action_id", "text", (c) => c.notNull().references("resource_actions.id").onDelete("cascade"))
    .addPrimaryKeyConstraint("role_permissions_pk", ["role_id", "action_id"])
    .execute();
  await index("role_permissions_env_role_idx", "role_permissions", ["environment_id", "role_id"]);
  await index("role_permissions_action_idx", "role_permissions", ["action_id"]);

  await db.schema
    .createTable("role_extends")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addColumn("extends_role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addPrimaryKeyConstraint("role_extends_pk", ["role_id", "extends_role_id"])
    .execute();
  await index("role_extends_env_role_idx", "role_extends", ["environment_id", "role_id"]);
  await index("role_extends_parent_idx", "role_extends", ["extends_role_id"]);

  // A relation lives on the object resource and names its subject resource.
  await stamped(
    scoped(db.schema.createTable("relations"))
      .addColumn("object_resource_id", "text", (c) =>
        c.notNull().references("resources.id").onDelete("cascade"),
      )
      .addColumn("subject_resource_id", "text", (c) =>
        c.notNull().references("resources.id").onDelete("cascade"),
      )
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text"),
  ).execute();
  await unique("relations_env_obj_key_uq", "relations", ["environment_id", "object_resource_id", "key"]);
  await index("relations_object_idx", "relations", ["object_resource_id"]);
  await index("relations_subject_idx", "relations", ["subject_resource_id"]);

  // "Users with source role on the subject, linked by relation, get role on the object."
  await db.schema
    .createTable("role_derivations")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addColumn("source_role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addColumn("relation_id", "text", (c) => c.notNull().references("relations.id").onDelete("cascade"))
    .addColumn("no_direct_roles_on_object", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await unique("role_derivations_uq", "role_derivations", [
    "environment_id",
    "role_id",
    "source_role_id",
    "relation_id",
  ]);
  await index("role_derivations_role_idx", "role_derivations", ["role_id"]);
  await index("role_derivations_source_idx", "role_derivations", ["source_role_id"]);
  await index("role_derivations_relation_idx", "role_derivations", ["relation_id"]);

  await stamped(
    scoped(db.schema.createTable("users"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("email", "text")
      .addColumn("first_name", "text")
      .addColumn("last_name", "text")
      .addColumn("attributes", "text"),
  ).execute();
  await unique("users_env_key_uq", "users", ["environment_id", "key"]);
  await index("users_env_created_idx", "users", ["environment_id", "created_at", "id"]);

  await stamped(
    scoped(db.schema.createTable("resource_instances"))
      .addColumn("resource_id", "text", (c) => c.notNull().references("resources.id").onDelete("cascade"))
      .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("attributes", "text"),
  ).execute();
  await unique("resource_instances_env_res_key_uq", "resource_instances", [
    "environment_id",
    "resource_id",
    "key",
  ]);
  await index("resource_instances_env_tenant_idx", "resource_instances", ["environment_id", "tenant_id"]);
  await index("resource_instances_resource_idx", "resource_instances", ["resource_id"]);
  await index("resource_instances_tenant_idx", "resource_instances", ["tenant_id"]);

  // resource_instance_id null: a tenant role; otherwise a role on that instance (tenant = the instance's).
  await scoped(db.schema.createTable("role_assignments"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("role_id", "text", (c) => c.notNull().references("roles.id").onDelete("cascade"))
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("resource_instance_id", "text", (c) =>
      c.references("resource_instances.id").onDelete("cascade"),
    )
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("role_assignments_tenant_role_uq")
    .on("role_assignments")
    .columns(["environment_id", "user_id", "role_id", "tenant_id"])
    .unique()
    .where(sql.ref("resource_instance_id"), "is", null)
    .execute();
  await unique("role_assignments_instance_role_uq", "role_assignments", [
    "environment_id",
    "user_id",
    "role_id",
    "resource_instance_id",
  ]);
  await index("role_assignments_env_created_idx", "role_assignments", ["environment_id", "created_at", "id"]);
  await index("role_assignments_env_role_idx", "role_assignments", ["environment_id", "role_id"]);
  await index("role_assignments_env_tenant_idx", "role_assignments", ["environment_id", "tenant_id"]);
  await index("role_assignments_user_idx", "role_assignments", ["user_id"]);
  await index("role_assignments_role_idx", "role_assignments", ["role_id"]);
  await index("role_assignments_tenant_idx", "role_assignments", ["tenant_id"]);
  await index("role_assignments_instance_idx", "role_assignments", ["resource_instance_id"]);

  await stamped(
    scoped(db.schema.createTable("relationship_tuples"))
      .addColumn("subject_id", "text", (c) =>
        c.notNull().references("resource_instances.id").onDelete("cascade"),
      )
      .addColumn("relation_id", "text", (c) => c.notNull().references("relations.id").onDelete("cascade"))
      .addColumn("object_id", "text", (c) =>
        c.notNull().references("resource_instances.id").onDelete("cascade"),
      )
      .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade")),
  ).execute();
  await unique("relationship_tuples_uq", "relationship_tuples", [
    "environment_id",
    "subject_id",
    "relation_id",
    "object_id",
  ]);
  await index("relationship_tuples_env_object_idx", "relationship_tuples", ["environment_id", "object_id"]);
  await index("relationship_tuples_env_created_idx", "relationship_tuples", [
    "environment_id",
    "created_at",
    "id",
  ]);
  await index("relationship_tuples_subject_idx", "relationship_tuples", ["subject_id"]);
  await index("relationship_tuples_object_idx", "relationship_tuples", ["object_id"]);
  await index("relationship_tuples_relation_idx", "relationship_tuples", ["relation_id"]);
  await index("relationship_tuples_tenant_idx", "relationship_tuples", ["tenant_id"]);

  await stamped(
    scoped(db.schema.createTable("condition_sets"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("autogenerated", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("resource_id", "text", (c) => c.references("resources.id").onDelete("cascade"))
      .addColumn("parent_id", "text", (c) => c.references("condition_sets.id").onDelete("cascade"))
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("description", "text")
      .addColumn("conditions", "text"),
  ).execute();
  await unique("condition_sets_env_key_uq", "condition_sets", ["environment_id", "key"]);
  await index("condition_sets_resource_idx", "condition_sets", ["resource_id"]);
  await index("condition_sets_parent_idx", "condition_sets", ["parent_id"]);

  await stamped(
    scoped(db.schema.createTable("condition_set_rules"))
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("user_set_id", "text", (c) =>
        c.notNull().references("condition_sets.id").onDelete("cascade"),
      )
      .addColumn("action_id", "text", (c) =>
        c.notNull().references("resource_actions.id").onDelete("cascade"),
      )
      .addColumn("resource_set_id", "text", (c) =>
        c.notNull().references("condition_sets.id").onDelete("cascade"),
      ),
  ).execute();
  await unique("condition_set_rules_uq", "condition_set_rules", [
    "environment_id",
    "user_set_id",
    "action_id",
    "resource_set_id",
  ]);
  await index("condition_set_rules_user_set_idx", "condition_set_rules", ["user_set_id"]);
  await index("condition_set_rules_resource_set_idx", "condition_set_rules", ["resource_set_id"]);
  await index("condition_set_rules_action_idx", "condition_set_rules", ["action_id"]);

  await index("tenants_env_created_idx", "tenants", ["environment_id", "created_at", "id"]);
}
