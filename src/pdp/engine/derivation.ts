// ReBAC: does a user hold, on an instance, one of the roles that grant a permission, directly or through role
// derivations along relationship tuples?
//
// The check searches backwards from the instance. A search node is (instance, state), where a state is a set of
// roles of one resource type such that holding any of them on the instance is enough. The start state is "the roles
// granting the permission"; following an incoming tuple (subject, relation, instance) leads to the state "the roles
// on the subject that some derivation rule turns into a role of the current state". States are interned and their
// transitions computed once per schema, so the search itself only walks integer arrays, marks visited nodes in
// generation-stamped typed arrays and allocates nothing. Because visited nodes are never expanded twice, cycles in
// tuples or in rules terminate. Every assignment and tuple used must be in the check's tenant.

import type { FactStore } from "./facts.ts";
import type { CompiledSchema } from "./schema.ts";
import type { DerivationHop } from "./types.ts";

export const NO_STATE = -1;
const UNKNOWN_STATE = -2;

// What scanning a user's direct assignments on an instance found.
const NO_DIRECT_ROLE = 0;
const OTHER_DIRECT_ROLE = 1;
const WANTED_DIRECT_ROLE = 2;

interface Transition {
  subjectType: number;
  /** Next state using only rules without no_direct_roles_on_object (the user has a direct role on the object). */
  always: number;
  /** Next state using every rule (the user has no direct role on the object). */
  whenNoDirect: number;
}

interface SearchState {
  roles: number[];
  /** role id -> 1 when the role is in the state */
  member: Uint8Array;
  /** relation id -> transition; built on first use */
  next: (Transition | undefined)[] | undefined;
}

/** Roles a user holds on an instance: `granted` directly or by derivation, `effective` adds what they extend. */
export interface HeldRoles {
  granted: Set<number>;
  effective: Set<number>;
}

export class DerivationSearch {
  private readonly states: SearchState[] = [];
  private readonly stateIds = new Map<string, number>();
  private readonly startStates: Int32Array;

  // Search nodes of the current search, in breadth-first order, reused across searches.
  private nodeInstance = new Int32Array(256);
  private nodeState = new Int32Array(256);
  private nodeParent = new Int32Array(256);
  private nodeRelation = new Int32Array(256);
  private nodeCount = 0;

  // visitGeneration[i] === generation: instance i was reached in this search with state visitState[i]; reaching it
  // with a second state (rare) is recorded in `revisits`.
  private visitGeneration = new Int32Array(0);
  private visitState = new Int32Array(0);
  private generation = 0;
  private readonly revisits = new Set<number>();

  private foundNode = -1;
  private foundRole = -1;

  constructor(
    private readonly facts: FactStore,
    private readonly schema: CompiledSchema,
  ) {
    this.startStates = new Int32Array(schema.permissionType.length).fill(UNKNOWN_STATE);
  }

  /** The state "roles granting `permission`", or NO_STATE when no resource role grants it. */
  startState(permission: number): number {
    let state = this.startStates[permission] as number;
    if (state === UNKNOWN_STATE) {
      const roles = this.schema.rolesGranting[permission];
      state = roles === undefined ? NO_STATE : this.intern(roles);
      this.startStates[permission] = state;
    }
    return state;
  }

  /** The state "holds exactly `role`" (not a role extending it), to name the role a listing reports. */
  exactState(role: number): number {
    return this.intern([role]);
  }

  private intern(roles: readonly number[]): number {
    const sorted = [...new Set(roles)].sort((a, b) => a - b);
    const key = sorted.join(",");
    let id = this.stateIds.get(key);
    if (id === undefined) {
      const member = new Uint8Array(this.facts.roles.size);
      for (const role of sorted) member[role] = 1;
      id = this.states.length;
      this.states.push({ roles: sorted, member, next: undefined });
      this.stateIds.set(key, id);
    }
    return id;
  }

  /** The state of roles whose holders hold one of `required`. */
  private closedState(required: Iterable<number>): number {
    const roles: number[] = [];
    for (const role of required) roles.push(...(this.schema.impliers[role] ?? [role]));
    return this.intern(roles);
  }

  private transitions(stateId: number): (Transition | undefined)[] {
    const state = this.states[stateId] as SearchState;
    if (state.next !== undefined) return state.next;
    const groups = new Map<number, { subjectType: number; all: Set<number>; always: Set<number> }>();
    for (const role of state.roles) {
      for (const rule of this.schema.rulesByRole[role] ?? []) {
        let group = groups.get(rule.relation);
        if (group === undefined) {
          group = { subjectType: rule.subjectType, all: new Set(), always: new Set() };
          groups.set(rule.relation, group);
        }
        group.all.add(rule.requires);
        if (!rule.noDirectRoles) group.always.add(rule.requires);
      }
    }
    const next = new Array<Transition | undefined>(this.facts.relations.size).fill(undefined);
    for (const [relation, group] of groups) {
      next[relation] = {
        subjectType: group.subjectType,
        whenNoDirect: this.closedState(group.all),
        always: group.always.size === 0 ? NO_STATE : this.closedState(group.always),
      };
    }
    state.next = next;
    return next;
  }

  /** Starts a new search from (instance, start): nothing visited yet, then that pair as the first node. */
  private beginSearch(instance: number, start: number): void {
    const instances = this.facts.instanceCount;
    if (this.visitGeneration.length < instances) {
      const capacity = Math.max(1024, instances * 2);
      this.visitGeneration = new Int32Array(capacity);
      this.visitState = new Int32Array(capacity);
      this.generation = 0;
    }
    if (this.generation === 0x7fffffff) {
      this.visitGeneration.fill(0);
      this.generation = 0;
    }
    this.generation++;
    if (this.revisits.size > 0) this.revisits.clear();
    this.nodeCount = 0;
    this.foundNode = -1;
    this.foundRole = -1;
    this.visit(instance, start);
    this.addNode(instance, start, -1, -1);
  }

  /** Marks (instance, state) visited; returns whether it already was. */
  private visit(instance: number, state: number): boolean {
    if (this.visitGeneration[instance] !== this.generation) {
      this.visitGeneration[instance] = this.generation;
      this.visitState[instance] = state;
      return false;
    }
    if (this.visitState[instance] === state) return true;
    const key = state * 0x80000000 + instance;
    if (this.revisits.has(key)) return true;
    this.revisits.add(key);
    return false;
  }

  private addNode(instance: number, state: number, parent: number, relation: number): void {
    const index = this.nodeCount++;
    if (index === this.nodeInstance.length) {
      const grow = (array: Int32Array) => {
        const next = new Int32Array(array.length * 2);
        next.set(array);
        return next;
      };
      this.nodeInstance = grow(this.nodeInstance);
      this.nodeState = grow(this.nodeState);
      this.nodeParent = grow(this.nodeParent);
      this.nodeRelation = grow(this.nodeRelation);
    }
    this.nodeInstance[index] = instance;
    this.nodeState[index] = state;
    this.nodeParent[index] = parent;
    this.nodeRelation[index] = relation;
  }

  /** Scans the user's direct assignments on the instance (the shorter of the two lists that hold them). */
  private scanDirect(user: number, instance: number, tenant: number, member: Uint8Array): number {
    const byUser = this.facts.userInstanceRoles[user];
    const byInstance = this.facts.instanceAssignees[instance];
    if (byUser === undefined || byInstance === undefined) return NO_DIRECT_ROLE;
    const fromUser = byUser.length <= byInstance.length;
    const list = fromUser ? byUser : byInstance;
    const match = fromUser ? instance : user;
    let result = NO_DIRECT_ROLE;
    for (let i = 0; i < list.length; i += 3) {
      if (list[i] !== match || list[i + 2] !== tenant) continue;
      const role = list[i + 1] as number;
      if (member[role] === 1) {
        this.foundRole = role;
        return WANTED_DIRECT_ROLE;
      }
      result = OTHER_DIRECT_ROLE;
    }
    return result;
  }

  /**
   * Whether the user holds a role of `start` on the instance in the tenant. When it does, explainGrant() describes
   * the path found (the shortest, as the search is breadth-first).
   */
  holds(user: number, instance: number, tenant: number, start: number): boolean {
    this.beginSearch(instance, start);
    const { facts } = this;
    for (let head = 0; head < this.nodeCount; head++) {
      const current = this.nodeInstance[head] as number;
      const stateId = this.nodeState[head] as number;
      const direct = this.scanDirect(user, current, tenant, (this.states[stateId] as SearchState).member);
      if (direct === WANTED_DIRECT_ROLE) {
        this.foundNode = head;
        return true;
      }
      const incoming = facts.tuplesIn[current];
      if (incoming === undefined) continue;
      const next = this.transitions(stateId);
      for (let i = 0; i < incoming.length; i += 3) {
        if (incoming[i + 2] !== tenant) continue;
        const relation = incoming[i + 1] as number;
        const transition = next[relation];
        if (transition === undefined) continue;
        const subject = incoming[i] as number;
        if (facts.instanceType[subject] !== transition.subjectType) continue;
        const target = direct === NO_DIRECT_ROLE ? transition.whenNoDirect : transition.always;
        if (target === NO_STATE || this.visit(subject, target)) continue;
        this.addNode(subject, target, head, relation);
      }
    }
    return false;
  }

  /** After holds() returned true: the role on the checked instance and the hops that derived it. */
  explainGrant(user: number, tenant: number): { role: number; via: DerivationHop[] } {
    const via: DerivationHop[] = [];
    let node = this.foundNode;
    let role = this.foundRole;
    for (
      let parent = this.nodeParent[node] as number;
      parent >= 0;
      parent = this.nodeParent[node] as number
    ) {
      const subject = this.nodeInstance[node] as number;
      const relation = this.nodeRelation[node] as number;
      via.push({
        role: this.facts.roleKey(role),
        instance: this.facts.instanceName(subject),
        relation: this.facts.relations.keyOf(relation),
      });
      role = this.derivedRole(user, tenant, parent, subject, relation, role);
      node = parent;
    }
    return { role, via };
  }

  /** A role of the parent node's state that a rule derives from holding `held` on the subject. */
  private derivedRole(
    user: number,
    tenant: number,
    parent: number,
    subject: number,
    relation: number,
    held: number,
  ) {
    const { facts, schema } = this;
    const implied = schema.impliedRoles[held] ?? [held];
    const object = this.nodeInstance[parent] as number;
    const subjectType = facts.instanceType[subject];
    for (const candidate of (this.states[this.nodeState[parent] as number] as SearchState).roles) {
      for (const rule of schema.rulesByRole[candidate] ?? []) {
        if (
          rule.relation !== relation ||
          rule.subjectType !== subjectType ||
          !implied.includes(rule.requires)
        )
          continue;
        if (!rule.noDirectRoles || !facts.hasDirectRole(user, object, tenant)) return candidate;
      }
    }
    throw new Error("derivation path without a matching rule");
  }

  /** The roles of the instance's type that the user is granted there (directly or derived; not via extends). */
  grantedRoles(user: number, instance: number, tenant: number): number[] {
    const roles = this.schema.resourceRoles[this.facts.instanceType[instance] as number] ?? [];
    return roles.filter((role) => this.holds(user, instance, tenant, this.exactState(role)));
  }

  /** Instances whose direct assignees could hold a role of `start` on the instance, the instance included. */
  candidateSources(instance: number, tenant: number, start: number): number[] {
    this.beginSearch(instance, start);
    const { facts } = this;
    for (let head = 0; head < this.nodeCount; head++) {
      const current = this.nodeInstance[head] as number;
      const incoming = facts.tuplesIn[current];
      if (incoming === undefined) continue;
      const next = this.transitions(this.nodeState[head] as number);
      for (let i = 0; i < incoming.length; i += 3) {
        const transition = next[incoming[i + 1] as number];
        const subject = incoming[i] as number;
        if (incoming[i + 2] !== tenant || transition === undefined) continue;
        if (facts.instanceType[subject] !== transition.subjectType) continue;
        if (this.visit(subject, transition.whenNoDirect)) continue;
        this.addNode(subject, transition.whenNoDirect, head, incoming[i + 1] as number);
      }
    }
    return [...new Set(this.nodeInstance.subarray(0, this.nodeCount))];
  }
}

/**
 * Forward closure: every instance on which the user holds roles in the tenant, starting from the user's direct
 * assignments and pushing roles along outgoing tuples until nothing changes. Used by listings, not by checks.
 */
export function rolesHeldByUser(
  facts: FactStore,
  schema: CompiledSchema,
  user: number,
  tenant: number,
): Map<number, HeldRoles> {
  const held = new Map<number, HeldRoles>();
  const queue: number[] = [];
  const grant = (instance: number, role: number) => {
    let entry = held.get(instance);
    if (entry === undefined) {
      entry = { granted: new Set(), effective: new Set() };
      held.set(instance, entry);
    }
    entry.granted.add(role);
    const before = entry.effective.size;
    for (const implied of schema.impliedRoles[role] ?? [role]) entry.effective.add(implied);
    if (entry.effective.size > before) queue.push(instance);
  };
  const direct = facts.userInstanceRoles[user] ?? [];
  for (let i = 0; i < direct.length; i += 3) {
    if (direct[i + 2] === tenant) grant(direct[i] as number, direct[i + 1] as number);
  }
  while (queue.length > 0) {
    const subject = queue.pop() as number;
    const effective = (held.get(subject) as HeldRoles).effective;
    const outgoing = facts.tuplesOut[subject] ?? [];
    for (let i = 0; i < outgoing.length; i += 3) {
      if (outgoing[i + 2] !== tenant) continue;
      const object = outgoing[i] as number;
      const rules =
        schema.rulesByObjectRelation[facts.instanceType[object] as number]?.[outgoing[i + 1] as number];
      for (const rule of rules ?? []) {
        if (rule.subjectType !== facts.instanceType[subject] || !effective.has(rule.requires)) continue;
        if (held.get(object)?.granted.has(rule.role)) continue;
        if (rule.noDirectRoles && facts.hasDirectRole(user, object, tenant)) continue;
        grant(object, rule.role);
      }
    }
  }
  return held;
}
