import type { Kysely } from "kysely";
import type { Dialect } from "../../src/db/store.ts";
import type { Database } from "../../src/db/types.ts";
import { insertRows } from "../../src/modules/environment-copy/environment-copy.repo.ts";
import { newId } from "../../src/lib/ids.ts";
import { now } from "../../src/lib/time.ts";
import { seedSchema, STANDARD_SCHEMA, type SchemaSpec, type SeededSchema } from "./seed-schema.ts";

/**
 * Policies for the environment copy tests, inserted straight into the schema tables: a small one that uses every
 * kind of policy object, and a large generated one.
 */

/** STANDARD_SCHEMA with a second folder role. */
export const RICH_SCHEMA: SchemaSpec = {
  ...STANDARD_SCHEMA,
  resources: {
    ...STANDARD_SCHEMA.resources,
    folder: { actions: ["read", "create"], roles: { owner: ["read", "create"], reader: ["read"] } },
  },
};

async function scopeOf(db: Kysely<Database>, envId: string) {
  const env = await db
    .selectFrom("environments")
    .select(["id", "organization_id", "project_id"])
    .where("id", "=", envId)
    .executeTakeFirstOrThrow();
  return { organization_id: env.organization_id, project_id: env.project_id, environment_id: env.id };
}

/**
 * RICH_SCHEMA plus what seedSchema does not make: attributes (also on the built-in `__user` resource), action
 * groups, role parents (resource and tenant roles), derivations, JSON fields, a condition set parent and set rules.
 */
export async function seedRichPolicy(db: Kysely<Database>, envId: string): Promise<SeededSchema> {
  const seeded = await seedSchema(db, envId, RICH_SCHEMA);
  const scoped = await scopeOf(db, envId);
  const at = now();
  const stamps = { created_at: at, updated_at: at };
  const id = (map: Record<string, string>, key: string): string => {
    const value = map[key];
    if (!value) throw new Error(`seedRichPolicy: no ${key}`);
    return value;
  };
  const document = id(seeded.resources, "document");
  // Every environment has the built-in user resource from its creation.
  const userResource = (
    await db
      .selectFrom("resources")
      .select("id")
      .where("environment_id", "=", envId)
      .where("key", "=", "__user")
      .executeTakeFirstOrThrow()
  ).id;
  await db
    .updateTable("resources")
    .set({ description: "documents", urn: "prn:doc", type_attributes: JSON.stringify({ icon: "doc" }) })
    .where("id", "=", document)
    .execute();
  await db
    .updateTable("resource_actions")
    .set({ description: "read it", attributes: JSON.stringify({ audit: true }) })
    .where("id", "=", id(seeded.actions, "document:read"))
    .execute();
  await db
    .insertInto("resource_attributes")
    .values([
      {
        ...scoped,
        id: newId(),
        resource_id: document,
        key: "classification",
        type: "string",
        description: "level",
        built_in: 0,
        ...stamps,
      },
      {
        ...scoped,
        id: newId(),
        resource_id: document,
        key: "pages",
        type: "number",
        description: null,
        built_in: 0,
        ...stamps,
      },
      {
        ...scoped,
        id: newId(),
        resource_id: userResource,
        key: "department",
        type: "string",
        description: null,
        built_in: 0,
        ...stamps,
      },
    ])
    .execute();
  const group = newId();
  await db
    .insertInto("action_groups")
    .values({
      ...scoped,
      id: group,
      resource_id: document,
      key: "modify",
      name: "Modify",
      description: null,
      attributes: null,
      ...stamps,
    })
    .execute();
  await db
    .insertInto("action_group_actions")
    .values([
      { environment_id: envId, action_group_id: group, action_id: id(seeded.actions, "document:write") },
      { environment_id: envId, action_group_id: group, action_id: id(seeded.actions, "document:delete") },
    ])
    .execute();
  await db
    .updateTable("roles")
    .set({ description: "edits", attributes: JSON.stringify({ level: 2 }), no_direct_roles_on_object: 1 })
    .where("id", "=", id(seeded.roles, "document#editor"))
    .execute();
  await db
    .insertInto("role_extends")
    .values([
      {
        environment_id: envId,
        role_id: id(seeded.roles, "document#editor"),
        extends_role_id: id(seeded.roles, "document#viewer"),
      },
      {
        environment_id: envId,
        role_id: id(seeded.roles, "admin"),
        extends_role_id: id(seeded.roles, "viewer"),
      },
    ])
    .execute();
  await db
    .insertInto("role_derivations")
    .values([
      {
        id: newId(),
        environment_id: envId,
        role_id: id(seeded.roles, "document#editor"),
        source_role_id: id(seeded.roles, "folder#owner"),
        relation_id: id(seeded.relations, "document#parent"),
        no_direct_roles_on_object: 1,
        created_at: at,
      },
      {
        id: newId(),
        environment_id: envId,
        role_id: id(seeded.roles, "document#viewer"),
        source_role_id: id(seeded.roles, "folder#reader"),
        relation_id: id(seeded.relations, "document#parent"),
        no_direct_roles_on_object: 0,
        created_at: at,
      },
    ])
    .execute();
  await db
    .updateTable("condition_sets")
    .set({
      parent_id: id(seeded.conditionSets, "us_users"),
      conditions: JSON.stringify({ allOf: [{ "user.region": { equals: "eu" } }] }),
    })
    .where("id", "=", id(seeded.conditionSets, "eu_users"))
    .execute();
  await db
    .insertInto("condition_set_rules")
    .values([
      {
        ...scoped,
        id: newId(),
        key: "us_users_document_read_secret_docs",
        user_set_id: id(seeded.conditionSets, "us_users"),
        action_id: id(seeded.actions, "document:read"),
        resource_set_id: id(seeded.conditionSets, "secret_docs"),
        ...stamps,
      },
      {
        ...scoped,
        id: newId(),
        key: "eu_users_folder_read_shared_folders",
        user_set_id: id(seeded.conditionSets, "eu_users"),
        action_id: id(seeded.actions, "folder:read"),
        resource_set_id: id(seeded.conditionSets, "shared_folders"),
        ...stamps,
      },
    ])
    .execute();
  return seeded;
}

export interface LargePolicySize {
  resources: number;
  actions: number;
  /** roles per resource, each with every action of its resource */
  roles: number;
}

/** A generated policy (`res0`..`resN` with `act*` and `role*`, every role holding every action), in batches. */
export async function seedLargePolicy(
  db: Kysely<Database>,
  dialect: Dialect,
  envId: string,
  size: LargePolicySize,
): Promise<void> {
  const scoped = await scopeOf(db, envId);
  const at = now();
  const stamps = { created_at: at, updated_at: at };
  const insert = (table: "resources" | "resource_actions" | "roles" | "role_permissions", rows: object[]) =>
    db.transaction().execute((trx) => insertRows(trx, dialect, table, rows as never[]));
  const resources: Record<string, unknown>[] = [];
  const actions: Record<string, unknown>[] = [];
  const roles: Record<string, unknown>[] = [];
  const permissions: Record<string, unknown>[] = [];
  for (let r = 0; r < size.resources; r++) {
    const resourceId = newId();
    resources.push({
      ...scoped,
      id: resourceId,
      key: `res${r}`,
      name: `Resource ${r}`,
      description: null,
      urn: null,
      type_attributes: null,
      built_in: 0,
      ...stamps,
    });
    const actionIds: string[] = [];
    for (let a = 0; a < size.actions; a++) {
      const actionId = newId();
      actionIds.push(actionId);
      actions.push({
        ...scoped,
        id: actionId,
        resource_id: resourceId,
        key: `act${a}`,
        name: `act${a}`,
        description: null,
        attributes: null,
        ...stamps,
      });
    }
    for (let o = 0; o < size.roles; o++) {
      const roleId = newId();
      roles.push({
        ...scoped,
        id: roleId,
        resource_id: resourceId,
        key: `role${o}`,
        name: `role${o}`,
        description: null,
        attributes: null,
        no_direct_roles_on_object: 0,
        ...stamps,
      });
      for (const actionId of actionIds)
        permissions.push({ environment_id: envId, role_id: roleId, action_id: actionId });
    }
  }
  await insert("resources", resources);
  await insert("resource_actions", actions);
  await insert("roles", roles);
  await insert("role_permissions", permissions);
}

/**
 * An environment's whole policy by keys, every field included, as sorted lines per kind: two environments
 * hold the same policy exactly when their fingerprints are equal.
 */
export async function policyOf(db: Kysely<Database>, envId: string): Promise<Record<string, string[]>> {
  const rows = <T extends keyof Database>(table: T) =>
    db
      .selectFrom(table as "resources")
      .selectAll()
      .where("environment_id", "=", envId)
      .execute() as unknown as Promise<Record<string, unknown>[]>;
  const [
    resources,
    actions,
    attributes,
    groups,
    members,
    roles,
    permissions,
    parents,
    relations,
    derivations,
    sets,
    rules,
  ] = await Promise.all([
    rows("resources"),
    rows("resource_actions"),
    rows("resource_attributes"),
    rows("action_groups"),
    rows("action_group_actions"),
    rows("roles"),
    rows("role_permissions"),
    rows("role_extends"),
    rows("relations"),
    rows("role_derivations"),
    rows("condition_sets"),
    rows("condition_set_rules"),
  ]);
  const byId = (list: Record<string, unknown>[]) => new Map(list.map((r) => [r["id"] as string, r]));
  const resourceById = byId(resources);
  const resourceKey = (id: unknown) => (id === null ? "" : String(resourceById.get(id as string)?.["key"]));
  const actionById = byId(actions);
  const roleById = byId(roles);
  const relationById = byId(relations);
  const setById = byId(sets);
  const groupById = byId(groups);
  const action = (id: unknown) => {
    const a = actionById.get(id as string);
    return `${resourceKey(a?.["resource_id"])}:${String(a?.["key"])}`;
  };
  const role = (id: unknown) => {
    const r = roleById.get(id as string);
    return `${resourceKey(r?.["resource_id"] ?? null)}#${String(r?.["key"])}`;
  };
  const relation = (id: unknown) => {
    const r = relationById.get(id as string);
    return `${resourceKey(r?.["object_resource_id"])}#${String(r?.["key"])}`;
  };
  const set = (id: unknown) => (id === null ? "" : String(setById.get(id as string)?.["key"]));
  const line = (...parts: unknown[]) => parts.map((p) => (p === null ? "∅" : String(p))).join("|");
  const sorted = (list: string[]) => list.sort();
  return {
    resources: sorted(
      resources.map((r) =>
        line(r["key"], r["name"], r["description"], r["urn"], r["type_attributes"], r["built_in"]),
      ),
    ),
    actions: sorted(actions.map((a) => line(action(a["id"]), a["name"], a["description"], a["attributes"]))),
    attributes: sorted(
      attributes.map((a) =>
        line(resourceKey(a["resource_id"]), a["key"], a["type"], a["description"], a["built_in"]),
      ),
    ),
    action_groups: sorted(
      groups.map((g) =>
        line(resourceKey(g["resource_id"]), g["key"], g["name"], g["description"], g["attributes"]),
      ),
    ),
    action_group_members: sorted(
      members.map((m) =>
        line(
          resourceKey(groupById.get(m["action_group_id"] as string)?.["resource_id"]),
          groupById.get(m["action_group_id"] as string)?.["key"],
          action(m["action_id"]),
        ),
      ),
    ),
    roles: sorted(
      roles.map((r) =>
        line(role(r["id"]), r["name"], r["description"], r["attributes"], r["no_direct_roles_on_object"]),
      ),
    ),
    permissions: sorted(permissions.map((p) => line(role(p["role_id"]), action(p["action_id"])))),
    extends: sorted(parents.map((e) => line(role(e["role_id"]), role(e["extends_role_id"])))),
    relations: sorted(
      relations.map((r) =>
        line(relation(r["id"]), r["name"], r["description"], resourceKey(r["subject_resource_id"])),
      ),
    ),
    derivations: sorted(
      derivations.map((d) =>
        line(
          role(d["role_id"]),
          role(d["source_role_id"]),
          relation(d["relation_id"]),
          d["no_direct_roles_on_object"],
        ),
      ),
    ),
    condition_sets: sorted(
      sets.map((s) =>
        line(
          s["key"],
          s["type"],
          resourceKey(s["resource_id"]),
          set(s["parent_id"]),
          s["name"],
          s["description"],
          s["conditions"],
          s["autogenerated"],
        ),
      ),
    ),
    condition_set_rules: sorted(
      rules.map((r) =>
        line(r["key"], set(r["user_set_id"]), action(r["action_id"]), set(r["resource_set_id"])),
      ),
    ),
  };
}
