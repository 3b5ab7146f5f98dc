import { sql, type Expression, type Selectable, type SelectQueryBuilder, type SqlBool } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ActionRow, ConditionSetRow, RelationRow, ResourceRow, RoleRow } from "../../db/rows.ts";
import type { Database, ActionGroupsTable, ResourceAttributesTable } from "../../db/types.ts";
import { idOrKey } from "../../lib/ids.ts";

/**
 * Queries shared by the schema modules (resources, their actions, attributes, groups, roles and relations,
 * tenant roles, condition sets): lookups by id or key, and the loaders that read a resource or a role with
 * everything inside it in a fixed number of queries, whatever the number of objects. What a delete takes with it is
 * read in schema-dependants.repo.ts.
 */
export type { ActionRow, ConditionSetRow, RelationRow, ResourceRow, RoleRow };
export type AttributeRow = Selectable<ResourceAttributesTable>;
export type ActionGroupRow = Selectable<ActionGroupsTable>;

/** `search` matches key or name, case-insensitively, with LIKE wildcards in the search text taken literally. */
export function matchesSearch(columns: string[], search: string): Expression<SqlBool> {
  const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const parts = columns.map((c) => sql<SqlBool>`lower(${sql.ref(c)}) like ${pattern} escape '\\'`);
  return sql<SqlBool>`(${sql.join(parts, sql` or `)})`;
}

/** A page of ids in creation order (then key), and the total the filtered query `q` matches. */
export async function pageOfIds<TB extends "resources" | "condition_sets" | "roles">(
  q: SelectQueryBuilder<Database, TB, object>,
  offset: number,
  limit: number,
): Promise<{ ids: string[]; total: number }> {
  const page = q.select("id").orderBy("created_at").orderBy("key").offset(offset).limit(limit);
  const rows = (await page.execute()) as { id: string }[];
  const count = await q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return { ids: rows.map((r) => r.id), total: Number(count.n) };
}

export const findResource = (db: Db, envId: string, ref: string): Promise<ResourceRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("resources")
    .selectAll()
    .where("environment_id", "=", envId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export const findAction = (
  db: Db,
  envId: string,
  resourceId: string,
  ref: string,
): Promise<ActionRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("resource_actions")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export const listActions = (db: Db, envId: string, resourceId: string): Promise<ActionRow[]> =>
  db
    .selectFrom("resource_actions")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .orderBy("created_at")
    .orderBy("key")
    .execute();

/** A tenant-level role when resourceId is null, otherwise a role of that resource. */
export const findRole = (
  db: Db,
  envId: string,
  resourceId: string | null,
  ref: string,
): Promise<RoleRow | undefined> => {
  const { column, value } = idOrKey(ref);
  let q = db.selectFrom("roles").selectAll().where("environment_id", "=", envId).where(column, "=", value);
  q = resourceId === null ? q.where("resource_id", "is", null) : q.where("resource_id", "=", resourceId);
  return q.executeTakeFirst();
};

export const listRoleRows = (db: Db, envId: string, resourceId: string | null): Promise<RoleRow[]> => {
  let q = db.selectFrom("roles").selectAll().where("environment_id", "=", envId);
  q = resourceId === null ? q.where("resource_id", "is", null) : q.where("resource_id", "=", resourceId);
  return q.orderBy("created_at").orderBy("key").execute();
};

export const findRelation = (
  db: Db,
  envId: string,
  objectResourceId: string,
  ref: string,
): Promise<RelationRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("relations")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("object_resource_id", "=", objectResourceId)
    .where(column, "=", value)
    .executeTakeFirst();
};

export const findConditionSet = (
  db: Db,
  envId: string,
  ref: string,
): Promise<ConditionSetRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("condition_sets")
    .selectAll()
    .where("environment_id", "=", envId)
    .where(column, "=", value)
    .executeTakeFirst();
};

/** "role X extends role Y" edges among the tenant roles (resourceId null) or the roles of one resource. */
export async function listExtendsEdges(
  db: Db,
  envId: string,
  resourceId: string | null,
): Promise<{ role_id: string; extends_role_id: string }[]> {
  let q = db
    .selectFrom("role_extends as e")
    .innerJoin("roles as r", "r.id", "e.role_id")
    .select(["e.role_id", "e.extends_role_id"])
    .where("e.environment_id", "=", envId);
  q = resourceId === null ? q.where("r.resource_id", "is", null) : q.where("r.resource_id", "=", resourceId);
  return q.execute();
}

export interface PermissionRef {
  actionId: string;
  actionKey: string;
  resourceKey: string;
}

export interface DerivationGraph {
  id: string;
  sourceRoleId: string;
  sourceRoleKey: string;
  sourceResourceId: string;
  sourceResourceKey: string;
  relationId: string;
  relationKey: string;
  noDirectRolesOnObject: boolean;
}

/** A role with its permissions, the roles it extends and (resource roles) the rules deriving it. */
export interface RoleGraph {
  row: RoleRow;
  /** null for tenant roles */
  resourceKey: string | null;
  permissions: PermissionRef[];
  extends: { id: string; key: string }[];
  derivations: DerivationGraph[];
}

/** Loads roles with everything that hangs off them; the result keeps the order of `roleIds`. */
export async function loadRoleGraphs(db: Db, envId: string, roleIds: string[]): Promise<RoleGraph[]> {
  if (roleIds.length === 0) return [];
  const [rows, permissions, parents, derivations] = await Promise.all([
    db
      .selectFrom("roles as r")
      .leftJoin("resources as res", "res.id", "r.resource_id")
      .selectAll("r")
      .select("res.key as resource_key")
      .where("r.environment_id", "=", envId)
      .where("r.id", "in", roleIds)
      .execute(),
    db
      .selectFrom("role_permissions as rp")
      .innerJoin("resource_actions as a", "a.id", "rp.action_id")
      .innerJoin("resources as res", "res.id", "a.resource_id")
      .select(["rp.role_id", "a.id as action_id", "a.key as action_key", "res.key as resource_key"])
      .where("rp.environment_id", "=", envId)
      .where("rp.role_id", "in", roleIds)
      .orderBy("res.key")
      .orderBy("a.key")
      .execute(),
    db
      .selectFrom("role_extends as e")
      .innerJoin("roles as p", "p.id", "e.extends_role_id")
      .select(["e.role_id", "p.id", "p.key"])
      .where("e.environment_id", "=", envId)
      .where("e.role_id", "in", roleIds)
      .orderBy("p.key")
      .execute(),
    db
      .selectFrom("role_derivations as d")
      .innerJoin("roles as sr", "sr.id", "d.source_role_id")
      .innerJoin("resources as sres", "sres.id", "sr.resource_id")
      .innerJoin("relations as rel", "rel.id", "d.relation_id")
      .select([
        "d.id",
        "d.role_id",
        "d.no_direct_roles_on_object",
        "sr.id as source_role_id",
        "sr.key as source_role_key",
        "sres.id as source_resource_id",
        "sres.key as source_resource_key",
        "rel.id as relation_id",
        "rel.key as relation_key",
      ])
      .where("d.environment_id", "=", envId)
      .where("d.role_id", "in", roleIds)
      .orderBy("d.created_at")
      .orderBy("sres.key")
      .orderBy("sr.key")
      .orderBy("rel.key")
      .execute(),
  ]);
  const graphs = new Map<string, RoleGraph>();
  for (const { resource_key, ...row } of rows) {
    graphs.set(row.id, { row, resourceKey: resource_key, permissions: [], extends: [], derivations: [] });
  }
  for (const p of permissions) {
    graphs.get(p.role_id)?.permissions.push({
      actionId: p.action_id,
      actionKey: p.action_key,
      resourceKey: p.resource_key,
    });
  }
  for (const p of parents) graphs.get(p.role_id)?.extends.push({ id: p.id, key: p.key });
  for (const d of derivations) {
    graphs.get(d.role_id)?.derivations.push({
      id: d.id,
      sourceRoleId: d.source_role_id,
      sourceRoleKey: d.source_role_key,
      sourceResourceId: d.source_resource_id,
      sourceResourceKey: d.source_resource_key,
      relationId: d.relation_id,
      relationKey: d.relation_key,
      noDirectRolesOnObject: d.no_direct_roles_on_object === 1,
    });
  }
  return roleIds.flatMap((id) => graphs.get(id) ?? []);
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const list = map.get(keyOf(item));
    if (list) list.push(item);
    else map.set(keyOf(item), [item]);
  }
  return map;
}

/** A resource with everything inside it: what ResourceRead and the engine's ResourceData are built from. */
export interface ResourceGraph {
  row: ResourceRow;
  actions: ActionRow[];
  attributes: AttributeRow[];
  groups: { row: ActionGroupRow; actionKeys: string[] }[];
  relations: { row: RelationRow; subjectKey: string }[];
  roles: RoleGraph[];
}

/**
 * Loads resources with their sub-objects in a fixed number of queries; keeps the order of `resourceIds`. The
 * sub-objects come in key order, so the maps of a read are the same whichever database wrote them.
 */
export async function loadResourceGraphs(
  db: Db,
  envId: string,
  resourceIds: string[],
): Promise<ResourceGraph[]> {
  if (resourceIds.length === 0) return [];
  const [rows, actions, attributes, groups, relations, roleIds] = await Promise.all([
    db
      .selectFrom("resources")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("id", "in", resourceIds)
      .execute(),
    db
      .selectFrom("resource_actions")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "in", resourceIds)
      .orderBy("key")
      .execute(),
    db
      .selectFrom("resource_attributes")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "in", resourceIds)
      .orderBy("key")
      .execute(),
    db
      .selectFrom("action_groups")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "in", resourceIds)
      .orderBy("key")
      .execute(),
    db
      .selectFrom("relations as rel")
      .innerJoin("resources as s", "s.id", "rel.subject_resource_id")
      .selectAll("rel")
      .select("s.key as subject_key")
      .where("rel.environment_id", "=", envId)
      .where("rel.object_resource_id", "in", resourceIds)
      .orderBy("rel.key")
      .execute(),
    db
      .selectFrom("roles")
      .select("id")
      .where("environment_id", "=", envId)
      .where("resource_id", "in", resourceIds)
      .orderBy("key")
      .execute(),
  ]);
  const [members, roles] = await Promise.all([
    groups.length === 0
      ? []
      : db
          .selectFrom("action_group_actions as m")
          .innerJoin("resource_actions as a", "a.id", "m.action_id")
          .select(["m.action_group_id", "a.key"])
          .where("m.environment_id", "=", envId)
          .where(
            "m.action_group_id",
            "in",
            groups.map((g) => g.id),
          )
          .orderBy("a.key")
          .execute(),
    loadRoleGraphs(
      db,
      envId,
      roleIds.map((r) => r.id),
    ),
  ]);
  const actionsOf = groupBy(actions, (a) => a.resource_id);
  const attributesOf = groupBy(attributes, (a) => a.resource_id);
  const groupsOf = groupBy(groups, (g) => g.resource_id);
  const relationsOf = groupBy(
    relations.map(({ subject_key, ...row }) => ({ row, subjectKey: subject_key })),
    (r) => r.row.object_resource_id,
  );
  const rolesOf = groupBy(roles, (r) => r.row.resource_id ?? "");
  const membersOf = groupBy(members, (m) => m.action_group_id);
  const graphs = new Map<string, ResourceGraph>();
  for (const row of rows) {
    graphs.set(row.id, {
      row,
      actions: actionsOf.get(row.id) ?? [],
      attributes: attributesOf.get(row.id) ?? [],
      groups: (groupsOf.get(row.id) ?? []).map((g) => ({
        row: g,
        actionKeys: (membersOf.get(g.id) ?? []).map((m) => m.key),
      })),
      relations: relationsOf.get(row.id) ?? [],
      roles: rolesOf.get(row.id) ?? [],
    });
  }
  return resourceIds.flatMap((id) => graphs.get(id) ?? []);
}

/** Every condition set's parent link in the environment, for walking ancestors and descendants. */
export const listConditionSetParents = (
  db: Db,
  envId: string,
): Promise<{ id: string; key: string; parent_id: string | null }[]> =>
  db
    .selectFrom("condition_sets")
    .select(["id", "key", "parent_id"])
    .where("environment_id", "=", envId)
    .execute();

export interface SetRuleRef {
  user_set: string;
  permission: string;
  resource_set: string;
}

/** An environment's set rules named by keys, as the engine names them; callers add filters and order. */
export const setRuleKeysQuery = (db: Db, envId: string) =>
  db
    .selectFrom("condition_set_rules as csr")
    .innerJoin("condition_sets as us", "us.id", "csr.user_set_id")
    .innerJoin("condition_sets as rs", "rs.id", "csr.resource_set_id")
    .innerJoin("resource_actions as a", "a.id", "csr.action_id")
    .innerJoin("resources as res", "res.id", "a.resource_id")
    .select([
      "us.key as user_set",
      "rs.key as resource_set",
      "a.key as action_key",
      "res.key as resource_key",
    ])
    .where("csr.environment_id", "=", envId);

export const toSetRuleRef = (r: {
  user_set: string;
  resource_set: string;
  action_key: string;
  resource_key: string;
}): SetRuleRef => ({
  user_set: r.user_set,
  permission: `${r.resource_key}:${r.action_key}`,
  resource_set: r.resource_set,
});

export async function loadConditionSets(
  db: Db,
  envId: string,
  ids: string[],
): Promise<(ConditionSetRow & { resource_key: string | null })[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("condition_sets as cs")
    .leftJoin("resources as r", "r.id", "cs.resource_id")
    .selectAll("cs")
    .select("r.key as resource_key")
    .where("cs.environment_id", "=", envId)
    .where("cs.id", "in", ids)
    .execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}
