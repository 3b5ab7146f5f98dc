import { sql, type Expression, type Selectable, type SqlBool } from "kysely";
import type { Db } from "../../db/db.ts";
import { QueryShapes } from "../../db/query-shapes.ts";
import type { ActionRow, ConditionSetRow, RelationRow, ResourceRow, RoleRow } from "../../db/rows.ts";
import type { ResourceInstancesTable, TenantsTable, UsersTable } from "../../db/types.ts";
import { isUuid } from "../../lib/ids.ts";

/**
 * Lookups shared by the facts modules (users, tenants, assignments, instances, tuples, set rules). Every query
 * names the environment first, so each is served by a unique index that starts with environment_id (or the
 * primary key, for an id).
 */
export type TenantRow = Selectable<TenantsTable>;
export type UserRow = Selectable<UsersTable>;
export type { ActionRow, ConditionSetRow, RelationRow, ResourceRow, RoleRow };
export type InstanceRow = Selectable<ResourceInstancesTable>;
/** An instance with the keys of its resource and tenant, as every read shows them. */
export type InstanceWithKeys = InstanceRow & { resource_key: string; tenant_key: string };

/** The single lookups of users, tenants and tenant-level roles, built once per shape (QueryShapes): writes run them. */
const shapes = new QueryShapes();

/** A path or body reference: the object's uuid or its key. A key that looks like a uuid still works. */
async function byRef<T>(
  ref: string,
  lookup: (column: "id" | "key", value: string) => Promise<T | undefined>,
): Promise<T | undefined> {
  if (isUuid(ref)) {
    const byId = await lookup("id", ref.toLowerCase());
    if (byId) return byId;
  }
  return lookup("key", ref);
}

export const findTenant = (db: Db, envId: string, ref: string): Promise<TenantRow | undefined> =>
  byRef(ref, async (column, value) => {
    const [row] = await shapes.rows(db, `tenant/${column}`, [envId, value], ([e, v]) =>
      db
        .selectFrom("tenants")
        .selectAll()
        .where("environment_id", "=", e as string)
        .where(column, "=", v as string),
    );
    return row;
  });

export const findUser = (db: Db, envId: string, ref: string): Promise<UserRow | undefined> =>
  byRef(ref, async (column, value) => {
    const [row] = await shapes.rows(db, `user/${column}`, [envId, value], ([e, v]) =>
      db
        .selectFrom("users")
        .selectAll()
        .where("environment_id", "=", e as string)
        .where(column, "=", v as string),
    );
    return row;
  });

export const findResource = (db: Db, envId: string, ref: string): Promise<ResourceRow | undefined> =>
  byRef(ref, (column, value) =>
    db
      .selectFrom("resources")
      .selectAll()
      .where("environment_id", "=", envId)
      .where(column, "=", value)
      .executeTakeFirst(),
  );

/**
 * What `byRef` finds for each of many refs, in one query per 500 ids and one per 500 keys: a uuid names the object
 * with that id, else the one with that key (a key that looks like a uuid still works).
 */
async function byRefs<T extends { id: string; key: string }>(
  refs: string[],
  lookup: (column: "id" | "key", values: string[]) => Promise<T[]>,
): Promise<Map<string, T | undefined>> {
  const distinct = [...new Set(refs)];
  const load = async (column: "id" | "key", values: string[]) =>
    new Map((await inChunks<string, T>(values, (slice) => lookup(column, slice))).map((r) => [r[column], r]));
  const byId = await load(
    "id",
    distinct.filter(isUuid).map((r) => r.toLowerCase()),
  );
  const byKey = await load("key", distinct);
  return new Map(
    distinct.map((ref) => [ref, (isUuid(ref) ? byId.get(ref.toLowerCase()) : undefined) ?? byKey.get(ref)]),
  );
}

export const findUsers = (db: Db, envId: string, refs: string[]) =>
  byRefs<UserRow>(refs, (column, values) =>
    db
      .selectFrom("users")
      .selectAll()
      .where("environment_id", "=", envId)
      .where(column, "in", values)
      .execute(),
  );

export const findTenants = (db: Db, envId: string, refs: string[]) =>
  byRefs<TenantRow>(refs, (column, values) =>
    db
      .selectFrom("tenants")
      .selectAll()
      .where("environment_id", "=", envId)
      .where(column, "in", values)
      .execute(),
  );

export const findTenantRoles = (db: Db, envId: string, refs: string[]) =>
  byRefs<RoleRow>(refs, (column, values) =>
    db
      .selectFrom("roles")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "is", null)
      .where(column, "in", values)
      .execute(),
  );

/** A tenant-level role (resource_id null). */
export const findTenantRole = (db: Db, envId: string, ref: string): Promise<RoleRow | undefined> =>
  byRef(ref, async (column, value) => {
    const [row] = await shapes.rows(db, `tenant role/${column}`, [envId, value], ([e, v]) =>
      db
        .selectFrom("roles")
        .selectAll()
        .where("environment_id", "=", e as string)
        .where("resource_id", "is", null)
        .where(column, "=", v as string),
    );
    return row;
  });

/** A role of one resource. */
export const findResourceRole = (
  db: Db,
  envId: string,
  resourceId: string,
  ref: string,
): Promise<RoleRow | undefined> =>
  byRef(ref, (column, value) =>
    db
      .selectFrom("roles")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "=", resourceId)
      .where(column, "=", value)
      .executeTakeFirst(),
  );

export const findAction = (
  db: Db,
  envId: string,
  resourceId: string,
  ref: string,
): Promise<ActionRow | undefined> =>
  byRef(ref, (column, value) =>
    db
      .selectFrom("resource_actions")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("resource_id", "=", resourceId)
      .where(column, "=", value)
      .executeTakeFirst(),
  );

/** A relation of the object resource. */
export const findRelation = (
  db: Db,
  envId: string,
  objectResourceId: string,
  ref: string,
): Promise<RelationRow | undefined> =>
  byRef(ref, (column, value) =>
    db
      .selectFrom("relations")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("object_resource_id", "=", objectResourceId)
      .where(column, "=", value)
      .executeTakeFirst(),
  );

export const findConditionSet = (db: Db, envId: string, ref: string): Promise<ConditionSetRow | undefined> =>
  byRef(ref, (column, value) =>
    db
      .selectFrom("condition_sets")
      .selectAll()
      .where("environment_id", "=", envId)
      .where(column, "=", value)
      .executeTakeFirst(),
  );

/** Keys of the instance's resource and tenant come along, so a read needs no further query. */
export const instancesWithKeys = (db: Db, envId: string) =>
  db
    .selectFrom("resource_instances as ri")
    .innerJoin("resources as res", "res.id", "ri.resource_id")
    .innerJoin("tenants as t", "t.id", "ri.tenant_id")
    .selectAll("ri")
    .select(["res.key as resource_key", "t.key as tenant_key"])
    .where("ri.environment_id", "=", envId);

export const findInstanceById = (db: Db, envId: string, id: string): Promise<InstanceWithKeys | undefined> =>
  instancesWithKeys(db, envId).where("ri.id", "=", id).executeTakeFirst();

export const findInstanceByKey = (
  db: Db,
  envId: string,
  resourceId: string,
  key: string,
): Promise<InstanceWithKeys | undefined> =>
  instancesWithKeys(db, envId)
    .where("ri.resource_id", "=", resourceId)
    .where("ri.key", "=", key)
    .executeTakeFirst();

/** How a client names an instance: its uuid, `type:key`, or (when unambiguous) its bare key. */
export type InstanceRef = { id: string } | { type: string; key: string } | { key: string };

export function parseInstanceRef(ref: string): InstanceRef {
  const colon = ref.indexOf(":");
  if (colon > 0 && colon < ref.length - 1) return { type: ref.slice(0, colon), key: ref.slice(colon + 1) };
  if (isUuid(ref)) return { id: ref.toLowerCase() };
  return { key: ref };
}

/**
 * Resolves an instance reference. A bare key that more than one resource uses is ambiguous: the caller gets
 * every match and decides.
 */
export async function findInstances(db: Db, envId: string, ref: string): Promise<InstanceWithKeys[]> {
  const parsed = parseInstanceRef(ref);
  if ("id" in parsed) {
    const row = await findInstanceById(db, envId, parsed.id);
    if (row) return [row];
    return instancesWithKeys(db, envId).where("ri.key", "=", ref).execute();
  }
  if ("type" in parsed) {
    const resource = await findResource(db, envId, parsed.type);
    if (!resource) return [];
    const row = await findInstanceByKey(db, envId, resource.id, parsed.key);
    return row ? [row] : [];
  }
  return instancesWithKeys(db, envId).where("ri.key", "=", parsed.key).execute();
}

export const instanceName = (row: { resource_key: string; key: string }): string =>
  `${row.resource_key}:${row.key}`;

export type SearchOperator = "contains" | "startswith" | "endswith";

/** Case-insensitive match of any of the columns; LIKE wildcards in the text are taken literally. */
export function searchAny(
  columns: Expression<unknown>[],
  text: string,
  operator: SearchOperator = "contains",
) {
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  const pattern =
    operator === "startswith" ? `${escaped}%` : operator === "endswith" ? `%${escaped}` : `%${escaped}%`;
  const parts = columns.map((column) => sql<SqlBool>`lower(${column}) like ${pattern} escape '\\'`);
  return sql<SqlBool>`(${sql.join(parts, sql` or `)})`;
}

/** Runs a statement per slice, so large bulk writes stay under the databases' bound-parameter limits. */
export async function inChunks<T, R>(items: T[], fn: (slice: T[]) => Promise<R[] | unknown>): Promise<R[]> {
  const out: R[] = [];
  for (let start = 0; start < items.length; start += 500) {
    const result = await fn(items.slice(start, start + 500));
    if (Array.isArray(result)) out.push(...(result as R[]));
  }
  return out;
}
