import type { Kysely } from "kysely";
import { writeToEnvironment } from "../../changes/write-groups.ts";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";
import type { EnvironmentRow } from "../environment-records.ts";
import { AppError, duplicate, invalid, notFound, notFoundOn } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJson, fromJsonObject, toJson } from "../../lib/json.ts";
import { KEY_PATTERN } from "../../lib/schemas.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import {
  findInstanceByKey,
  findInstances,
  findResource,
  findResourceRole,
  findTenant,
  findTenantRole,
  findTenantRoles,
  findTenants,
  findUser,
  findUsers,
  instanceName,
  parseInstanceRef,
  type InstanceWithKeys,
  type ResourceRow,
  type RoleRow,
  type TenantRow,
  type UserRow,
} from "./facts.repo.ts";

/**
 * Writes shared by the facts modules (users, tenants, role assignments, resource instances, relationship tuples,
 * set rules, bulk): the transaction with its change records, request-scoped lookups, instance creation.
 */

/** What a facts write needs of its environment: the ids every row carries. */
export type Env = Pick<EnvironmentRow, "id" | "organization_id" | "project_id">;

export const scopedIds = (env: Env) => ({
  organization_id: env.organization_id,
  project_id: env.project_id,
  environment_id: env.id,
});

const KEY_RE = new RegExp(KEY_PATTERN);

export function assertKey(key: string, what: string, loc: (string | number)[]): void {
  if (!KEY_RE.test(key) || key.length > 255) {
    throw invalid(`${what} key '${key}' must match ${KEY_PATTERN}`, loc);
  }
}

// ---- change records: keys, never uuids (see src/pdp/engine/types.ts) ----

export const userChange = (row: UserRow): Change => ({
  kind: "user",
  op: "upsert",
  data: {
    key: row.key,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    attributes: fromJsonObject(row.attributes),
  },
});

export const tenantChange = (row: TenantRow): Change => ({
  kind: "tenant",
  op: "upsert",
  data: { key: row.key, attributes: fromJsonObject(row.attributes) },
});

export const instanceChange = (row: InstanceWithKeys): Change => ({
  kind: "resource_instance",
  op: "upsert",
  data: {
    resource: row.resource_key,
    key: row.key,
    tenant: row.tenant_key,
    attributes: fromJsonObject(row.attributes),
  },
});

export const instanceDeleteChange = (row: { resource_key: string; key: string }): Change => ({
  kind: "resource_instance",
  op: "delete",
  data: { resource: row.resource_key, key: row.key },
});

/**
 * Request-scoped lookups with a memory, so a bulk write of a thousand assignments reads each user, role and
 * tenant once. `require*` answers 404 naming the missing object.
 */
export class Resolver {
  private readonly users = new Map<string, UserRow | undefined>();
  private readonly tenants = new Map<string, TenantRow | undefined>();
  private readonly resources = new Map<string, ResourceRow | undefined>();
  private readonly tenantRoles = new Map<string, RoleRow | undefined>();
  private readonly resourceRoles = new Map<string, RoleRow | undefined>();
  private readonly instances = new Map<string, InstanceWithKeys[]>();

  constructor(
    readonly db: Db,
    readonly env: Env,
  ) {}

  private async memo<T>(map: Map<string, T>, key: string, load: () => Promise<T>): Promise<T> {
    if (map.has(key)) return map.get(key) as T;
    const value = await load();
    map.set(key, value);
    return value;
  }

  user = (ref: string) => this.memo(this.users, ref, () => findUser(this.db, this.env.id, ref));
  tenant = (ref: string) => this.memo(this.tenants, ref, () => findTenant(this.db, this.env.id, ref));
  resource = (ref: string) => this.memo(this.resources, ref, () => findResource(this.db, this.env.id, ref));
  tenantRole = (ref: string) =>
    this.memo(this.tenantRoles, ref, () => findTenantRole(this.db, this.env.id, ref));
  resourceRole = (resourceId: string, ref: string) =>
    this.memo(this.resourceRoles, `${resourceId}\u0000${ref}`, () =>
      findResourceRole(this.db, this.env.id, resourceId, ref),
    );
  instanceMatches = (ref: string) =>
    this.memo(this.instances, ref, () => findInstances(this.db, this.env.id, ref));

  /**
   * Reads the users, tenants and tenant-level roles that the refs name, one query per kind (and per 500 refs),
   * so that a bulk write's lookups of them cost nothing afterwards; a ref it does not find is remembered as
   * missing. Refs already looked up are not read again.
   */
  async preload(refs: { users?: string[]; tenants?: string[]; tenantRoles?: string[] }): Promise<void> {
    const load = async <T>(
      map: Map<string, T | undefined>,
      wanted: string[] | undefined,
      find: (db: Db, envId: string, refs: string[]) => Promise<Map<string, T | undefined>>,
    ) => {
      const missing = (wanted ?? []).filter((ref) => !map.has(ref));
      if (missing.length === 0) return;
      for (const [ref, row] of await find(this.db, this.env.id, missing)) map.set(ref, row);
    };
    await load(this.users, refs.users, findUsers);
    await load(this.tenants, refs.tenants, findTenants);
    await load(this.tenantRoles, refs.tenantRoles, findTenantRoles);
  }

  /** What a lookup or `preload` found, without a promise: undefined when the ref is missing or not looked up yet. */
  known(kind: "user", ref: string): UserRow | undefined;
  known(kind: "tenant", ref: string): TenantRow | undefined;
  known(kind: "tenantRole", ref: string): RoleRow | undefined;
  known(kind: "user" | "tenant" | "tenantRole", ref: string): UserRow | TenantRow | RoleRow | undefined {
    return (kind === "user" ? this.users : kind === "tenant" ? this.tenants : this.tenantRoles).get(ref);
  }

  async requireUser(ref: string): Promise<UserRow> {
    const row = await this.user(ref);
    if (!row) throw notFound("user", ref);
    return row;
  }

  async requireTenant(ref: string): Promise<TenantRow> {
    const row = await this.tenant(ref);
    if (!row) throw notFound("tenant", ref);
    return row;
  }

  async requireResource(ref: string): Promise<ResourceRow> {
    const row = await this.resource(ref);
    if (!row) throw notFound("resource", ref);
    return row;
  }

  async requireTenantRole(ref: string): Promise<RoleRow> {
    const row = await this.tenantRole(ref);
    if (!row) {
      throw new AppError("NOT_FOUND", `tenant-level role '${ref}' was not found`, { object: "role", ref });
    }
    return row;
  }

  async requireResourceRole(resource: ResourceRow, ref: string): Promise<RoleRow> {
    const row = await this.resourceRole(resource.id, ref);
    if (!row) {
      throw notFoundOn("role", ref, resource);
    }
    return row;
  }

  /** The instance, or undefined when it does not exist; 422 when a bare key names several instances. */
  async instance(ref: string): Promise<InstanceWithKeys | undefined> {
    const rows = await this.instanceMatches(ref);
    if (rows.length > 1) {
      throw invalid(`resource instance '${ref}' is ambiguous: name it as 'type:key'`, [
        "body",
        "resource_instance",
      ]);
    }
    return rows[0];
  }

  async requireInstance(ref: string): Promise<InstanceWithKeys> {
    const row = await this.instance(ref);
    if (row) return row;
    const parsed = parseInstanceRef(ref);
    if ("type" in parsed) await this.requireResource(parsed.type);
    throw notFound("resource instance", ref);
  }

  /**
   * Looks the user up again, past what an earlier lookup found: after an insert found its key taken by a
   * transaction that committed since (the insert waited for it), a new read sees that user.
   */
  reloadUser(ref: string): Promise<UserRow | undefined> {
    this.users.delete(ref);
    return this.user(ref);
  }

  remember(kind: "user", ref: string, row: UserRow | undefined): void;
  remember(kind: "tenant", ref: string, row: TenantRow | undefined): void;
  remember(kind: "instance", ref: string, row: InstanceWithKeys | undefined): void;
  remember(kind: "user" | "tenant" | "instance", ref: string, row: unknown): void {
    if (kind === "user") this.users.set(ref, row as UserRow | undefined);
    else if (kind === "tenant") this.tenants.set(ref, row as TenantRow | undefined);
    else this.instances.set(ref, row ? [row as InstanceWithKeys] : []);
  }

  /** After deletes: anything may have gone. */
  forget(): void {
    for (const map of [this.users, this.tenants, this.instances]) map.clear();
  }
}

/**
 * Inserts an instance unless its key is taken, records its change and teaches the resolver about it. Undefined
 * (nothing written) when the key is taken, also by a transaction that committed after this one looked: the insert
 * waits for it, and `findInstanceByKey` then reads its instance.
 */
export async function insertInstance(
  resolver: Resolver,
  input: {
    resource: ResourceRow;
    tenant: TenantRow;
    key: string;
    attributes?: Record<string, unknown> | null;
  },
  changes: Change[],
): Promise<InstanceWithKeys | undefined> {
  const at = now();
  const row: InstanceWithKeys = {
    id: newId(),
    ...scopedIds(resolver.env),
    resource_id: input.resource.id,
    tenant_id: input.tenant.id,
    key: input.key,
    attributes: toJson(input.attributes),
    created_at: at,
    updated_at: at,
    resource_key: input.resource.key,
    tenant_key: input.tenant.key,
  };
  const { resource_key: _r, tenant_key: _t, ...insertable } = row;
  const result = await resolver.db
    .insertInto("resource_instances")
    .values(insertable)
    .onConflict((oc) => oc.columns(["environment_id", "resource_id", "key"]).doNothing())
    .executeTakeFirst();
  if (Number(result.numInsertedOrUpdatedRows ?? 0) === 0) return undefined;
  changes.push(instanceChange(row));
  resolver.remember("instance", instanceName(row), row);
  resolver.remember("instance", row.id, row);
  return row;
}

/**
 * An instance named by `type:key`, created in `tenant` when it does not exist yet (the way Permit creates
 * instances that a tuple or an assignment names). Without a tenant, a missing instance is a 404. An instance that
 * a concurrent request created first is used as it is (the caller checks its tenant).
 */
export async function instanceOrCreate(
  resolver: Resolver,
  ref: string,
  tenant: TenantRow | undefined,
  changes: Change[],
  loc: (string | number)[],
): Promise<{ instance: InstanceWithKeys; created: boolean }> {
  const existing = await resolver.instance(ref);
  if (existing) return { instance: existing, created: false };
  const parsed = parseInstanceRef(ref);
  if (!("type" in parsed) || !tenant) {
    if ("type" in parsed) await resolver.requireResource(parsed.type);
    throw notFound("resource instance", ref);
  }
  const resource = await resolver.requireResource(parsed.type);
  assertKey(parsed.key, "resource instance", loc);
  const instance = await insertInstance(resolver, { resource, tenant, key: parsed.key }, changes);
  if (instance) return { instance, created: true };
  const taken = await findInstanceByKey(resolver.db, resolver.env.id, resource.id, parsed.key);
  if (!taken) throw duplicate("resource instance", `${resource.key}:${parsed.key}`);
  resolver.remember("instance", ref, taken);
  return { instance: taken, created: false };
}

export const attributesOrNull = (text: string | null): Record<string, unknown> | null =>
  fromJson<Record<string, unknown>>(text);

/**
 * One facts write: one transaction, the resolver bound to it, and every change record appended at the end as one
 * revision of the environment. A write that changed nothing adds no revision. The transaction is shared with the
 * process's concurrent writes to the environment (src/changes/write-groups.ts) unless `alone` (a bulk write).
 */
export const writeFacts = <T>(
  db: Kysely<Database>,
  env: Env,
  fn: (resolver: Resolver, changes: Change[]) => Promise<T>,
  options: { alone?: boolean } = {},
): Promise<T> =>
  writeToEnvironment(
    db,
    env.id,
    async (trx) => {
      const changes: Change[] = [];
      const result = await fn(new Resolver(trx, env), changes);
      return { result, records: changes.length > 0 ? changes : undefined };
    },
    options,
  );

/** A bulk facts write: as writeFacts, in a transaction of its own (it would hold up a group's other writes). */
export const writeFactsInBulk = <T>(
  db: Kysely<Database>,
  env: Env,
  fn: (resolver: Resolver, changes: Change[]) => Promise<T>,
): Promise<T> => writeFacts(db, env, fn, { alone: true });
