import { AppError, invalid } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { now, toTimestamp } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import { instanceName, type UserRow } from "./facts.repo.ts";
import { instanceOrCreate, Resolver, scopedIds } from "./facts-write.ts";
import {
  deleteAssignment,
  deleteAssignments,
  findAssignment,
  insertAssignments,
  tenantAssignmentsOf,
  type AssignmentKey,
  type AssignmentRow,
  type AssignmentWithKeys,
} from "./role-assignments.repo.ts";
import type { RoleAssignmentRead } from "./facts.schemas.ts";

/**
 * Assigning and unassigning roles inside the caller's transaction, shared by the modules that assign roles:
 * role-assignments, users (roles given with a user), tenants and bulk.
 */

export const assignmentRead = (a: AssignmentWithKeys): RoleAssignmentRead => ({
  id: a.id,
  user: a.user_key,
  role: a.role_key,
  tenant: a.tenant_key,
  ...(a.resource_instance_id !== null &&
    a.resource_key !== null &&
    a.instance_key !== null && {
      resource_instance: `${a.resource_key}:${a.instance_key}`,
      resource_instance_id: a.resource_instance_id,
    }),
  user_id: a.user_id,
  role_id: a.role_id,
  tenant_id: a.tenant_id,
  organization_id: a.organization_id,
  project_id: a.project_id,
  environment_id: a.environment_id,
  created_at: a.created_at,
  ...(a.expires_at !== null && { expires_at: a.expires_at }),
});

export const assignmentChange = (
  a: Pick<
    AssignmentWithKeys,
    "user_key" | "role_key" | "tenant_key" | "resource_key" | "instance_key" | "expires_at"
  >,
  op: "upsert" | "delete",
): Change => ({
  kind: "role_assignment",
  op,
  data: {
    user: a.user_key,
    role: a.role_key,
    tenant: a.tenant_key,
    resource_instance:
      a.resource_key !== null && a.instance_key !== null ? `${a.resource_key}:${a.instance_key}` : null,
    ...(op === "upsert" && a.expires_at !== null && { expires_at: a.expires_at }),
  },
});

interface AssignmentTarget {
  role: string;
  tenant?: string | undefined;
  resource_instance?: string | undefined;
  expires_at?: string | undefined;
}

/** Whether an assignment's expiry has come by `at` (both timestamps as `toTimestamp` writes them). */
export const hasExpired = (a: { expires_at: string | null }, at: string): boolean =>
  a.expires_at !== null && a.expires_at <= at;

/**
 * An assignment's expiry as stored: the schema has checked it is a date-time; it must also lie in the future.
 * Stored with a +00:00 offset so that text order is time order (the purge and the lists compare text).
 */
function expiryOf(input: AssignmentTarget, loc: (string | number)[]): string | null {
  if (input.expires_at === undefined) return null;
  const at = Date.parse(input.expires_at);
  if (Number.isNaN(at)) {
    throw invalid(`expires_at '${input.expires_at}' is not a valid date-time`, [...loc, "expires_at"]);
  }
  if (at <= Date.now()) {
    throw invalid(`expires_at '${input.expires_at}' is not in the future`, [...loc, "expires_at"]);
  }
  return toTimestamp(new Date(at));
}

/**
 * Turns an assignment's references into rows, answering 404 for anything missing. A tenant role needs a tenant;
 * an instance role takes its tenant from the instance, and when the instance does not exist yet it is created in
 * the given tenant (as Permit does).
 */
async function resolveTarget(
  resolver: Resolver,
  user: UserRow,
  input: AssignmentTarget,
  changes: Change[] | null,
  loc: (string | number)[],
): Promise<AssignmentWithKeys> {
  const expiresAt = changes === null ? null : expiryOf(input, loc);
  const base = (role: { id: string; key: string; name: string }, tenant: { id: string; key: string }) => ({
    id: newId(),
    ...scopedIds(resolver.env),
    user_id: user.id,
    role_id: role.id,
    tenant_id: tenant.id,
    created_at: now(),
    expires_at: expiresAt,
    user_key: user.key,
    role_key: role.key,
    tenant_key: tenant.key,
    user_email: user.email,
    user_first_name: user.first_name,
    user_last_name: user.last_name,
    user_attributes: user.attributes,
    role_name: role.name,
  });
  if (input.resource_instance !== undefined) {
    const tenant = input.tenant !== undefined ? await resolver.requireTenant(input.tenant) : undefined;
    const { instance } =
      changes === null
        ? { instance: await resolver.requireInstance(input.resource_instance) }
        : await instanceOrCreate(resolver, input.resource_instance, tenant, changes, [
            ...loc,
            "resource_instance",
          ]);
    if (tenant && tenant.id !== instance.tenant_id) {
      throw invalid(
        `resource instance '${instanceName(instance)}' belongs to tenant '${instance.tenant_key}', not '${tenant.key}'`,
        [...loc, "tenant"],
      );
    }
    const resource = await resolver.requireResource(instance.resource_id);
    const role = await resolver.requireResourceRole(resource, input.role);
    const instanceTenant = tenant ?? (await resolver.requireTenant(instance.tenant_id));
    return {
      ...base(role, instanceTenant),
      resource_instance_id: instance.id,
      instance_key: instance.key,
      resource_key: instance.resource_key,
      tenant_name: instanceTenant.name,
      tenant_attributes: instanceTenant.attributes,
      instance_attributes: instance.attributes,
    };
  }
  if (input.tenant === undefined) {
    throw invalid("tenant is required to assign or unassign a tenant-level role", [...loc, "tenant"]);
  }
  const role = await resolver.requireTenantRole(input.role);
  const tenant = await resolver.requireTenant(input.tenant);
  return {
    ...base(role, tenant),
    resource_instance_id: null,
    instance_key: null,
    resource_key: null,
    tenant_name: tenant.name,
    tenant_attributes: tenant.attributes,
    instance_attributes: null,
  };
}

const assignmentIdentity = (a: AssignmentRow) =>
  `${a.user_id}\u0000${a.role_id}\u0000${a.resource_instance_id ?? `tenant:${a.tenant_id}`}`;
const keyIdentity = (k: AssignmentKey) =>
  `${k.userId}\u0000${k.roleId}\u0000${k.instanceId ?? `tenant:${k.tenantId}`}`;

const toRow = (a: AssignmentWithKeys): AssignmentRow => ({
  id: a.id,
  organization_id: a.organization_id,
  project_id: a.project_id,
  environment_id: a.environment_id,
  user_id: a.user_id,
  role_id: a.role_id,
  tenant_id: a.tenant_id,
  resource_instance_id: a.resource_instance_id,
  created_at: a.created_at,
  expires_at: a.expires_at,
});

/**
 * What the items of one bulk assignment share: the tenant-level assignments its users already hold in its roles
 * (read by `load` in one query per 500 users, not one per item), and the rows it decided to write, inserted
 * together by `flush` (500 a statement) instead of one statement per item. Later items see earlier ones' rows.
 */
export class AssignmentBatch {
  private readonly known = new Map<string, AssignmentRow>();
  private readonly loadedUsers = new Set<string>();
  private pending: AssignmentRow[] = [];
  /** The change record of each pending row, by index. */
  private pendingChanges: Change[] = [];

  constructor(private readonly resolver: Resolver) {}

  async load(userIds: string[], roleIds: string[]): Promise<void> {
    const { db, env } = this.resolver;
    const fresh = [...new Set(userIds)].filter((id) => !this.loadedUsers.has(id));
    for (const row of await tenantAssignmentsOf(db, env.id, fresh, [...new Set(roleIds)])) {
      const identity = assignmentIdentity(row);
      if (!this.known.has(identity)) this.known.set(identity, row);
    }
    for (const id of fresh) this.loadedUsers.add(id);
  }

  async find(k: AssignmentKey): Promise<AssignmentRow | undefined> {
    const known = this.known.get(keyIdentity(k));
    if (known || (k.instanceId === null && this.loadedUsers.has(k.userId))) return known;
    return findAssignment(this.resolver.db, this.resolver.env.id, k);
  }

  /**
   * Assigns a tenant-level role the way `assignRoles` does ("skip" for one already held), without a promise, when
   * everything it needs is in memory: the user, role and tenant in the resolver, the user's assignments in the
   * batch. Returns whether it wrote the assignment, or undefined (having changed nothing) when the item needs
   * `assignRoles`: something to look up, an error to answer, an ended assignment to delete. An import's items
   * are nearly all of this kind, and awaiting each step of each one cost more than the rest of the work.
   */
  assignKnown(
    user: UserRow,
    input: AssignmentTarget,
    changes: Change[],
    at: string,
    loc: (string | number)[],
  ): boolean | undefined {
    if (input.resource_instance !== undefined || input.tenant === undefined) return undefined;
    if (!this.loadedUsers.has(user.id)) return undefined;
    const role = this.resolver.known("tenantRole", input.role);
    const tenant = this.resolver.known("tenant", input.tenant);
    if (!role || !tenant) return undefined;
    const expiresAt = expiryOf(input, loc);
    const existing = this.known.get(
      keyIdentity({ userId: user.id, roleId: role.id, tenantId: tenant.id, instanceId: null }),
    );
    if (existing && hasExpired(existing, at)) return undefined;
    if (existing) return false;
    const row: AssignmentRow = {
      id: newId(),
      ...scopedIds(this.resolver.env),
      user_id: user.id,
      role_id: role.id,
      tenant_id: tenant.id,
      resource_instance_id: null,
      created_at: at,
      expires_at: expiresAt,
    };
    const change = assignmentChange(
      {
        user_key: user.key,
        role_key: role.key,
        tenant_key: tenant.key,
        resource_key: null,
        instance_key: null,
        expires_at: expiresAt,
      },
      "upsert",
    );
    this.add([row], [change]);
    changes.push(change);
    return true;
  }

  forget(row: AssignmentRow): void {
    this.known.delete(assignmentIdentity(row));
  }

  /** New rows to insert at `flush`, with the change record of each (already in the write's changes). */
  add(rows: AssignmentRow[], rowChanges: Change[]): void {
    for (const row of rows) this.known.set(assignmentIdentity(row), row);
    this.pending.push(...rows);
    this.pendingChanges.push(...rowChanges);
  }

  /**
   * Inserts the pending rows and returns how many it inserted. A row that a concurrent request inserted since
   * `load` is held already: its change record leaves `changes`, as if this request had come second.
   */
  async flush(changes: Change[]): Promise<number> {
    const [rows, rowChanges] = [this.pending, this.pendingChanges];
    [this.pending, this.pendingChanges] = [[], []];
    const inserted = await insertAssignments(this.resolver.db, rows);
    if (inserted.size < rows.length) {
      const held = new Set(rowChanges.filter((_, i) => !inserted.has(rows[i]?.id ?? "")));
      let kept = 0;
      for (const change of changes) if (!held.has(change)) changes[kept++] = change;
      changes.length = kept;
    }
    return inserted.size;
  }
}

/**
 * Assigns roles to one user inside the caller's transaction. `onExisting: "fail"` answers 409 for a role the user
 * already holds; "skip" leaves it. Returns the assignments written. With a `batch`, existing assignments are looked
 * up there and the new rows wait in it until its `flush`.
 */
export async function assignRoles(
  resolver: Resolver,
  user: UserRow,
  inputs: AssignmentTarget[],
  changes: Change[],
  onExisting: "fail" | "skip",
  loc: (string | number)[] = ["body"],
  batch?: AssignmentBatch,
): Promise<AssignmentWithKeys[]> {
  const written: AssignmentWithKeys[] = [];
  const seen = new Set<string>();
  const at = now();
  for (const [i, input] of inputs.entries()) {
    const target = await resolveTarget(resolver, user, input, changes, inputs.length > 1 ? [...loc, i] : loc);
    const identity = assignmentIdentity(target);
    if (seen.has(identity)) continue;
    seen.add(identity);
    const key = {
      userId: target.user_id,
      roleId: target.role_id,
      tenantId: target.tenant_id,
      instanceId: target.resource_instance_id,
    };
    const existing = batch ? await batch.find(key) : await findAssignment(resolver.db, resolver.env.id, key);
    if (existing && hasExpired(existing, at)) {
      // Ended but not purged yet: it grants nothing, so the new assignment takes its place. Whoever deleted it
      // announces it, once: a second delete record would take the new assignment of a concurrent request away.
      if (await deleteAssignment(resolver.db, resolver.env.id, existing.id)) {
        changes.push(assignmentChange({ ...target, expires_at: existing.expires_at }, "delete"));
      }
      batch?.forget(existing);
    } else if (existing) {
      if (onExisting === "skip") continue;
      throw alreadyHeld(user, target);
    }
    written.push(target);
  }
  const rows = written.map(toRow);
  const upserts = written.map((a) => assignmentChange(a, "upsert"));
  if (batch) {
    batch.add(rows, upserts);
    changes.push(...upserts);
    return written;
  }
  // Without the ones a concurrent request inserted since the lookup.
  const inserted = await insertAssignments(resolver.db, rows);
  const held = written.find((a) => !inserted.has(a.id));
  if (held && onExisting === "fail") throw alreadyHeld(user, held);
  changes.push(...upserts.filter((_, i) => inserted.has(written[i]?.id ?? "")));
  return written.filter((a) => inserted.has(a.id));
}

function alreadyHeld(user: UserRow, target: AssignmentWithKeys): AppError {
  const where = target.resource_instance_id
    ? `resource instance '${target.resource_key}:${target.instance_key}'`
    : `tenant '${target.tenant_key}'`;
  return new AppError(
    "DUPLICATE_ENTITY",
    `user '${user.key}' already has role '${target.role_key}' in ${where}`,
    {
      object: "role assignment",
      user: user.key,
      role: target.role_key,
      tenant: target.tenant_key,
    },
  );
}

/**
 * Removes one role of a user inside the caller's transaction; `onMissing: "fail"` answers 404 when the user does
 * not hold it. Returns the assignment removed.
 */
export async function unassignRole(
  resolver: Resolver,
  user: UserRow,
  input: AssignmentTarget,
  changes: Change[],
  onMissing: "fail" | "skip",
  loc: (string | number)[] = ["body"],
): Promise<AssignmentWithKeys | null> {
  const target = await resolveTarget(resolver, user, input, null, loc);
  const existing = await findAssignment(resolver.db, resolver.env.id, {
    userId: target.user_id,
    roleId: target.role_id,
    tenantId: target.tenant_id,
    instanceId: target.resource_instance_id,
  });
  if (!existing) {
    if (onMissing === "skip") return null;
    throw new AppError(
      "NOT_FOUND",
      `user '${user.key}' does not have role '${target.role_key}' in ${
        target.resource_instance_id
          ? `resource instance '${target.resource_key}:${target.instance_key}'`
          : `tenant '${target.tenant_key}'`
      }`,
      { object: "role assignment", user: user.key, role: target.role_key, tenant: target.tenant_key },
    );
  }
  await deleteAssignments(resolver.db, resolver.env.id, [existing.id]);
  const removed = {
    ...target,
    id: existing.id,
    created_at: existing.created_at,
    expires_at: existing.expires_at,
  };
  changes.push(assignmentChange(removed, "delete"));
  return removed;
}
