// Role assignments with an `expires_at`. They live in the fact store like any other assignment; this module only
// remembers when each one ends, in a small min-heap kept apart from the facts, so that a check on an environment
// without expiring assignments pays one comparison. Before each decision the engine hands in its clock: assignments
// whose instant has come are removed from the facts at once (the database's purge deletes the row later, and its
// delete change is then a no-op), and are kept aside until that delete arrives so a deny can say what expired.

import { findRecord } from "./adjacency.ts";
import { resourceRoleName, type FactStore } from "./facts.ts";
import type { Change, ExpiredGrant, RoleAssignmentData } from "./types.ts";

interface Pending {
  at: number;
  identity: string;
}

/** One assignment's identity as the fact store sees it: (user, tenant, role), or (user, instance, role). */
function identityOf(data: RoleAssignmentData): string {
  const instance = data.resource_instance ?? null;
  return instance === null
    ? `t\u0000${data.user}\u0000${data.tenant}\u0000${data.role}`
    : `i\u0000${data.user}\u0000${instance}\u0000${data.role}`;
}

/** The instant in ms; an unreadable one counts as already past (a grant that cannot be timed is not kept). */
function instantOf(expiresAt: string): number {
  const at = Date.parse(expiresAt);
  return Number.isNaN(at) ? -Infinity : at;
}

export class ExpiringAssignments {
  /** When the earliest pending expiry falls (ms since the epoch); Infinity when nothing is pending. */
  next = Infinity;
  /** identity -> the assignment and its instant, for assignments held now that will expire. */
  private readonly live = new Map<string, { at: number; data: RoleAssignmentData }>();
  /** A binary min-heap on `at`; entries whose identity was since deleted or re-timed are skipped when popped. */
  private readonly heap: Pending[] = [];
  /** user key -> identity -> grants that expired and whose row has not been deleted yet. */
  private readonly ended = new Map<string, Map<string, ExpiredGrant & { data: RoleAssignmentData }>>();

  /** Follows an assignment change (also every assignment of a snapshot). Cheap when nothing expires. */
  record(op: "upsert" | "delete", data: RoleAssignmentData): void {
    const expiresAt = op === "upsert" ? data.expires_at : undefined;
    if (expiresAt === undefined || expiresAt === null) {
      if (this.live.size === 0 && this.ended.size === 0) return;
      const identity = identityOf(data);
      this.live.delete(identity);
      this.forgetEnded(data.user, identity);
      this.compact();
      return;
    }
    const identity = identityOf(data);
    const at = instantOf(expiresAt);
    this.live.set(identity, { at, data });
    this.forgetEnded(data.user, identity);
    this.push({ at, identity });
    this.compact();
  }

  /**
   * Deletes and re-timings leave their old heap entries behind until their instant; rebuilt from `live` once
   * they dominate, so the heap stays bounded and checks stop reading the clock when nothing expires any more.
   */
  private compact(): void {
    if (this.heap.length <= 2 * this.live.size + 64 && this.live.size > 0) return;
    this.heap.length = 0;
    this.next = Infinity;
    for (const [identity, { at }] of this.live) this.push({ at, identity });
  }

  /** Whether any expired grant awaits its delete (the deny path looks further only then). */
  anyEnded(): boolean {
    return this.ended.size > 0;
  }

  /**
   * Follows every change: assignment upserts and deletes, and the deletes that cascade to assignments (user,
   * tenant, tenant role, resource type, instance), which take the expired grants they cover along.
   */
  follow(change: Change): void {
    if (change.kind === "role_assignment") return this.record(change.op, change.data);
    if (change.op !== "delete" || this.ended.size === 0) return;
    switch (change.kind) {
      case "user":
        this.ended.delete(change.data.key);
        return;
      case "tenant":
        return this.forgetEndedWhere((d) => d.tenant === change.data.key);
      case "role":
        return this.forgetEndedWhere((d) => !d.resource_instance && d.role === change.data.key);
      case "resource":
        return this.forgetEndedWhere((d) => d.resource_instance?.startsWith(`${change.data.key}:`) === true);
      case "resource_instance": {
        const name = `${change.data.resource}:${change.data.key}`;
        return this.forgetEndedWhere((d) => d.resource_instance === name);
      }
    }
  }

  private forgetEndedWhere(matches: (data: RoleAssignmentData) => boolean): void {
    for (const [user, byUser] of this.ended) {
      for (const [identity, grant] of byUser) if (matches(grant.data)) byUser.delete(identity);
      if (byUser.size === 0) this.ended.delete(user);
    }
  }

  /** Removes from the facts every assignment whose instant is at or before the clock's now. */
  expireDue(facts: FactStore, clock: () => number): void {
    if (this.next === Infinity) return;
    const now = clock();
    if (now < this.next) return;
    while (this.heap.length > 0 && (this.heap[0] as Pending).at <= now) {
      const { at, identity } = this.pop();
      const held = this.live.get(identity);
      if (held === undefined || held.at !== at) continue;
      this.live.delete(identity);
      facts.deleteAssignment(held.data);
      const { data } = held;
      let byUser = this.ended.get(data.user);
      if (byUser === undefined) {
        byUser = new Map();
        this.ended.set(data.user, byUser);
      }
      byUser.set(identity, {
        data,
        role: data.role,
        tenant: data.tenant,
        ...(data.resource_instance && { resource_instance: data.resource_instance }),
        expired_at: data.expires_at as string,
      });
    }
    this.next = this.heap.length > 0 ? (this.heap[0] as Pending).at : Infinity;
  }

  /**
   * The user's expired grants that would allow the decision: each is put back into the facts, `decides` is asked,
   * and it is taken out again. Runs on the deny path only, and only for a user with expired grants.
   */
  expiredGrantsAllowing(facts: FactStore, userKey: string, decides: () => boolean): ExpiredGrant[] {
    const byUser = this.ended.get(userKey);
    if (byUser === undefined) return [];
    const found: ExpiredGrant[] = [];
    for (const { data, ...grant } of byUser.values()) {
      if (!restorable(facts, data)) continue;
      facts.upsertAssignment(data);
      const allowed = decides();
      facts.deleteAssignment(data);
      if (allowed) found.push(grant);
    }
    return found;
  }

  private forgetEnded(userKey: string, identity: string): void {
    const byUser = this.ended.get(userKey);
    if (byUser === undefined) return;
    byUser.delete(identity);
    if (byUser.size === 0) this.ended.delete(userKey);
  }

  private push(entry: Pending): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Pending).at <= entry.at) break;
      heap[i] = heap[parent] as Pending;
      i = parent;
    }
    heap[i] = entry;
    if (entry.at < this.next) this.next = entry.at;
  }

  private pop(): Pending {
    const heap = this.heap;
    const top = heap[0] as Pending;
    const last = heap.pop() as Pending;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child =
          right < heap.length && (heap[right] as Pending).at < (heap[left] as Pending).at ? right : left;
        if ((heap[child] as Pending).at >= last.at) break;
        heap[i] = heap[child] as Pending;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}

/**
 * Whether an expired assignment can be put back for a moment and taken out again leaving the facts as they were:
 * its user, tenant and instance still exist, and the facts do not hold the same assignment.
 */
function restorable(facts: FactStore, data: RoleAssignmentData): boolean {
  const user = facts.users.get(data.user);
  const tenant = facts.tenants.get(data.tenant);
  if (user === undefined || !facts.userExists(user) || tenant === undefined || !facts.tenantExists(tenant)) {
    return false;
  }
  if (data.resource_instance === undefined || data.resource_instance === null) {
    const role = facts.roles.get(data.role);
    return role === undefined || findRecord(facts.userTenantRoles[user], 2, tenant, role) < 0;
  }
  const colon = data.resource_instance.indexOf(":");
  const type = facts.types.get(data.resource_instance.slice(0, colon));
  const instance =
    colon <= 0 || type === undefined
      ? undefined
      : facts.instanceId(type, data.resource_instance.slice(colon + 1));
  if (instance === undefined || facts.instanceTenant[instance] !== tenant) return false;
  const role = facts.roles.get(resourceRoleName(data.resource_instance.slice(0, colon), data.role));
  return role === undefined || findRecord(facts.userInstanceRoles[user], 3, instance, role) < 0;
}
