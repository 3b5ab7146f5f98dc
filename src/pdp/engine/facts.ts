// The fact store: users, tenants, resource instances, role assignments and relationship tuples, kept as integer
// ids in flat adjacency lists (see adjacency.ts) so that a fact costs a few array slots, not an object.
// Every change touches only the lists of the nodes it names; nothing here is rebuilt from scratch.

import {
  appendPair,
  appendTriple,
  findRecord,
  removeRecordAt,
  removeRecordsWhere,
  type AdjacencyList,
} from "./adjacency.ts";
import type { UserProfile } from "./conditions.ts";
import { Interner } from "./interner.ts";
import { setMember, setSlot, setTypedSlot } from "./journal.ts";
import type {
  Attributes,
  RelationshipTupleData,
  RelationshipTupleRef,
  ResourceInstanceData,
  RoleAssignmentData,
  TenantData,
  UserData,
} from "./types.ts";

const NO_TENANT = -1;
const EMPTY_PROFILE: UserProfile = Object.freeze({});
const EMPTY_ATTRIBUTES: Attributes = Object.freeze({});

export interface TenantRecord {
  attributes: Attributes;
}

/** Role ids share one space: a tenant role is interned by its key, a resource role as "<resource>#<role>". */
export function resourceRoleName(resource: string, role: string): string {
  return `${resource}#${role}`;
}

/** The key users know a role by: the interned name without the "<resource>#" prefix of resource roles. */
function displayRoleKey(internedName: string): string {
  return internedName.slice(internedName.indexOf("#") + 1);
}

/** Splits "type:key"; undefined when there is no colon. */
function parseInstanceName(name: string): [type: string, key: string] | undefined {
  const colon = name.indexOf(":");
  if (colon <= 0 || colon === name.length - 1) return undefined;
  return [name.slice(0, colon), name.slice(colon + 1)];
}

function copyAttributes(attributes: Attributes | null | undefined): Attributes | undefined {
  if (attributes === null || attributes === undefined) return undefined;
  return Object.keys(attributes).length === 0 ? undefined : { ...attributes };
}

function removeMember(members: Set<number> | undefined, user: number): void {
  if (members !== undefined) setMember(members, user, false);
}

/** Rewrites the third field of the record (a, b, _) in a list of triples. */
function setThird(list: AdjacencyList | undefined, a: number, b: number, value: number): void {
  const at = findRecord(list, 3, a, b);
  if (list !== undefined && at >= 0) setSlot(list, at + 2, value);
}

function grow(array: Int32Array<ArrayBuffer>, needed: number, fill: number): Int32Array<ArrayBuffer> {
  if (needed <= array.length) return array;
  const next = new Int32Array(Math.max(needed, array.length * 2));
  next.set(array);
  next.fill(fill, array.length);
  return next;
}

export class FactStore {
  readonly users = new Interner();
  readonly tenants = new Interner();
  readonly types = new Interner();
  readonly roles = new Interner();
  readonly relations = new Interner();

  /** By user id; undefined for a user that was never upserted or was deleted. */
  readonly userProfiles: (UserProfile | undefined)[] = [];
  readonly tenantRecords: (TenantRecord | undefined)[] = [];

  /** Instance ids are global across types; the key -> id maps are per type so a lookup needs no string concat. */
  readonly instancesByType: (Map<string, number> | undefined)[] = [];
  instanceCount = 0;
  instanceType = new Int32Array(1024);
  /** The instance's tenant id, or NO_TENANT for an id whose instance was deleted. */
  instanceTenant = new Int32Array(1024).fill(NO_TENANT);
  readonly instanceKeys: string[] = [];
  readonly instanceAttributes: (Attributes | undefined)[] = [];
  /** type -> the ids of its instances ever created, ascending (listing walks page through it by position) */
  readonly typeInstanceIds: (number[] | undefined)[] = [];

  /** user -> [tenant, role, ...] tenant-level role assignments */
  readonly userTenantRoles: (AdjacencyList | undefined)[] = [];
  /** tenant -> users holding at least one tenant role there (for authorized-users and tenant cascades) */
  readonly tenantMembers: (Set<number> | undefined)[] = [];
  /** user -> [instance, role, tenant, ...] instance role assignments */
  readonly userInstanceRoles: (AdjacencyList | undefined)[] = [];
  /** instance -> [user, role, tenant, ...] the same assignments, seen from the instance */
  readonly instanceAssignees: (AdjacencyList | undefined)[] = [];
  /** object instance -> [subject, relation, tenant, ...] */
  readonly tuplesIn: (AdjacencyList | undefined)[] = [];
  /** subject instance -> [object, relation, tenant, ...] */
  readonly tuplesOut: (AdjacencyList | undefined)[] = [];

  private readonly roleDisplayKeys: string[] = [];

  // ---- lookups ----

  /** The key users know the role by (cached: it is part of every allow reason). */
  roleKey(role: number): string {
    let key = this.roleDisplayKeys[role];
    if (key === undefined) {
      key = displayRoleKey(this.roles.keyOf(role));
      this.roleDisplayKeys[role] = key;
    }
    return key;
  }

  userExists(user: number): boolean {
    return this.userProfiles[user] !== undefined;
  }

  tenantExists(tenant: number): boolean {
    return this.tenantRecords[tenant] !== undefined;
  }

  tenantAttributes(tenant: number): Attributes {
    return this.tenantRecords[tenant]?.attributes ?? EMPTY_ATTRIBUTES;
  }

  /** The id of an existing instance, or undefined. */
  instanceId(type: number, key: string): number | undefined {
    const id = this.instancesByType[type]?.get(key);
    return id !== undefined && (this.instanceTenant[id] as number) !== NO_TENANT ? id : undefined;
  }

  instanceExists(instance: number): boolean {
    return (this.instanceTenant[instance] as number) !== NO_TENANT;
  }

  instanceName(instance: number): string {
    return `${this.types.keyOf(this.instanceType[instance] as number)}:${this.instanceKeys[instance] as string}`;
  }

  /** Whether the user holds any role assignment on the instance in the tenant. */
  hasDirectRole(user: number, instance: number, tenant: number): boolean {
    const byUser = this.userInstanceRoles[user];
    const byInstance = this.instanceAssignees[instance];
    if (byUser === undefined || byInstance === undefined) return false;
    const fromUser = byUser.length <= byInstance.length;
    const list = fromUser ? byUser : byInstance;
    const match = fromUser ? instance : user;
    for (let i = 0; i < list.length; i += 3) {
      if (list[i] === match && list[i + 2] === tenant) return true;
    }
    return false;
  }

  // ---- users and tenants ----

  upsertUser(data: UserData): void {
    const id = this.users.intern(data.key);
    const profile: UserProfile = {};
    if (data.email) profile.email = data.email;
    if (data.first_name) profile.first_name = data.first_name;
    if (data.last_name) profile.last_name = data.last_name;
    const attributes = copyAttributes(data.attributes);
    if (attributes !== undefined) profile.attributes = attributes;
    setSlot(this.userProfiles, id, Object.keys(profile).length === 0 ? EMPTY_PROFILE : profile);
  }

  deleteUser(key: string): void {
    const user = this.users.get(key);
    if (user === undefined) return;
    const tenantRoles = this.userTenantRoles[user];
    if (tenantRoles !== undefined) {
      for (let i = 0; i < tenantRoles.length; i += 2)
        removeMember(this.tenantMembers[tenantRoles[i] as number], user);
      setSlot(this.userTenantRoles, user, undefined);
    }
    const instanceRoles = this.userInstanceRoles[user];
    if (instanceRoles !== undefined) {
      for (let i = 0; i < instanceRoles.length; i += 3) {
        this.removeFromInstance(instanceRoles[i] as number, user, instanceRoles[i + 1] as number);
      }
      setSlot(this.userInstanceRoles, user, undefined);
    }
    setSlot(this.userProfiles, user, undefined);
  }

  upsertTenant(data: TenantData): void {
    setSlot(this.tenantRecords, this.tenants.intern(data.key), {
      attributes: copyAttributes(data.attributes) ?? EMPTY_ATTRIBUTES,
    });
  }

  /** Deletes the tenant and every role assignment (tenant or instance level) made in it. */
  deleteTenant(key: string): void {
    const tenant = this.tenants.get(key);
    if (tenant === undefined) return;
    for (const user of this.tenantMembers[tenant] ?? []) {
      setSlot(
        this.userTenantRoles,
        user,
        removeRecordsWhere(this.userTenantRoles[user], 2, (l, i) => l[i] === tenant),
      );
    }
    setSlot(this.tenantMembers, tenant, undefined);
    for (let user = 0; user < this.userInstanceRoles.length; user++) {
      this.removeInstanceRolesWhere(user, (_instance, _role, t) => t === tenant);
    }
    setSlot(this.tenantRecords, tenant, undefined);
  }

  // ---- resource instances ----

  private ensureInstance(type: string, key: string, tenant: number): number {
    const typeId = this.types.intern(type);
    let byKey = this.instancesByType[typeId];
    if (byKey === undefined) {
      byKey = new Map();
      this.instancesByType[typeId] = byKey;
    }
    let id = byKey.get(key);
    if (id === undefined) {
      id = this.instanceCount++;
      byKey.set(key, id);
      this.instanceType = grow(this.instanceType, this.instanceCount, 0);
      this.instanceTenant = grow(this.instanceTenant, this.instanceCount, NO_TENANT);
      this.instanceType[id] = typeId;
      this.instanceKeys[id] = key;
      (this.typeInstanceIds[typeId] ??= []).push(id);
    }
    if (this.instanceTenant[id] === NO_TENANT) setTypedSlot(this, "instanceTenant", id, tenant);
    return id;
  }

  upsertInstance(data: ResourceInstanceData): void {
    const tenant = this.tenants.intern(data.tenant);
    const id = this.ensureInstance(data.resource, data.key, tenant);
    setTypedSlot(this, "instanceTenant", id, tenant);
    setSlot(this.instanceAttributes, id, copyAttributes(data.attributes));
  }

  /** Deletes the instance with its tuples (both directions) and the role assignments on it. */
  deleteInstance(type: string, key: string): void {
    const typeId = this.types.get(type);
    const id = typeId === undefined ? undefined : this.instanceId(typeId, key);
    if (id !== undefined) this.deleteInstanceById(id);
  }

  private deleteInstanceById(id: number): void {
    const incoming = this.tuplesIn[id];
    setSlot(this.tuplesIn, id, undefined);
    for (let i = 0; incoming !== undefined && i < incoming.length; i += 3) {
      const subject = incoming[i] as number;
      if (subject !== id) this.removeTupleRecord(this.tuplesOut, subject, id, incoming[i + 1] as number);
    }
    const outgoing = this.tuplesOut[id];
    setSlot(this.tuplesOut, id, undefined);
    for (let i = 0; outgoing !== undefined && i < outgoing.length; i += 3) {
      const object = outgoing[i] as number;
      if (object !== id) this.removeTupleRecord(this.tuplesIn, object, id, outgoing[i + 1] as number);
    }
    const assignees = this.instanceAssignees[id];
    setSlot(this.instanceAssignees, id, undefined);
    for (let i = 0; assignees !== undefined && i < assignees.length; i += 3) {
      const user = assignees[i] as number;
      const list = this.userInstanceRoles[user];
      const at = findRecord(list, 3, id, assignees[i + 1] as number);
      if (list !== undefined && at >= 0) setSlot(this.userInstanceRoles, user, removeRecordAt(list, 3, at));
    }
    setTypedSlot(this, "instanceTenant", id, NO_TENANT);
    setSlot(this.instanceAttributes, id, undefined);
  }

  deleteInstancesOfType(type: string): void {
    const typeId = this.types.get(type);
    const byKey = typeId === undefined ? undefined : this.instancesByType[typeId];
    for (const id of byKey?.values() ?? []) {
      if (this.instanceExists(id)) this.deleteInstanceById(id);
    }
  }

  // ---- relationship tuples ----

  private removeTupleRecord(
    lists: (AdjacencyList | undefined)[],
    node: number,
    other: number,
    relation: number,
  ) {
    const list = lists[node];
    const at = findRecord(list, 3, other, relation);
    if (list !== undefined && at >= 0) setSlot(lists, node, removeRecordAt(list, 3, at));
  }

  /** Creates missing subject and object instances in the tuple's tenant, as the API does. */
  upsertTuple(data: RelationshipTupleData): void {
    const subjectName = parseInstanceName(data.subject);
    const objectName = parseInstanceName(data.object);
    if (subjectName === undefined || objectName === undefined) return;
    const tenant = this.tenants.intern(data.tenant);
    const subject = this.ensureInstance(subjectName[0], subjectName[1], tenant);
    const object = this.ensureInstance(objectName[0], objectName[1], tenant);
    const relation = this.relations.intern(data.relation);
    const out = this.tuplesOut[subject];
    const inc = this.tuplesIn[object];
    // Look in the shorter list: a folder may have 100k children while each child has one parent.
    const exists =
      (out?.length ?? 0) <= (inc?.length ?? 0)
        ? findRecord(out, 3, object, relation) >= 0
        : findRecord(inc, 3, subject, relation) >= 0;
    if (exists) {
      // Same (subject, relation, object): only the tenant can change.
      setThird(out, object, relation, tenant);
      setThird(inc, subject, relation, tenant);
      return;
    }
    setSlot(this.tuplesOut, subject, appendTriple(out, object, relation, tenant));
    setSlot(this.tuplesIn, object, appendTriple(inc, subject, relation, tenant));
  }

  deleteTuple(data: RelationshipTupleRef): void {
    const subjectName = parseInstanceName(data.subject);
    const objectName = parseInstanceName(data.object);
    const relation = this.relations.get(data.relation);
    if (subjectName === undefined || objectName === undefined || relation === undefined) return;
    const subjectType = this.types.get(subjectName[0]);
    const objectType = this.types.get(objectName[0]);
    if (subjectType === undefined || objectType === undefined) return;
    const subject = this.instanceId(subjectType, subjectName[1]);
    const object = this.instanceId(objectType, objectName[1]);
    if (subject === undefined || object === undefined) return;
    this.removeTupleRecord(this.tuplesOut, subject, object, relation);
    this.removeTupleRecord(this.tuplesIn, object, subject, relation);
  }

  // ---- role assignments ----

  /** Instance assignments create a missing instance in the assignment's tenant. */
  upsertAssignment(data: RoleAssignmentData): void {
    const user = this.users.intern(data.user);
    const tenant = this.tenants.intern(data.tenant);
    if (data.resource_instance === undefined || data.resource_instance === null) {
      const role = this.roles.intern(data.role);
      const list = this.userTenantRoles[user];
      if (findRecord(list, 2, tenant, role) >= 0) return;
      setSlot(this.userTenantRoles, user, appendPair(list, tenant, role));
      let members = this.tenantMembers[tenant];
      if (members === undefined) {
        members = new Set();
        setSlot(this.tenantMembers, tenant, members);
      }
      setMember(members, user, true);
      return;
    }
    const name = parseInstanceName(data.resource_instance);
    if (name === undefined) return;
    const instance = this.ensureInstance(name[0], name[1], tenant);
    const role = this.roles.intern(resourceRoleName(name[0], data.role));
    const byUser = this.userInstanceRoles[user];
    const byInstance = this.instanceAssignees[instance];
    const exists =
      (byUser?.length ?? 0) <= (byInstance?.length ?? 0)
        ? findRecord(byUser, 3, instance, role) >= 0
        : findRecord(byInstance, 3, user, role) >= 0;
    if (exists) {
      setThird(byUser, instance, role, tenant);
      setThird(byInstance, user, role, tenant);
      return;
    }
    setSlot(this.userInstanceRoles, user, appendTriple(byUser, instance, role, tenant));
    setSlot(this.instanceAssignees, instance, appendTriple(byInstance, user, role, tenant));
  }

  deleteAssignment(data: RoleAssignmentData): void {
    const user = this.users.get(data.user);
    if (user === undefined) return;
    if (data.resource_instance === undefined || data.resource_instance === null) {
      const tenant = this.tenants.get(data.tenant);
      const role = this.roles.get(data.role);
      if (tenant === undefined || role === undefined) return;
      this.removeTenantRole(user, tenant, role);
      return;
    }
    const name = parseInstanceName(data.resource_instance);
    const type = name === undefined ? undefined : this.types.get(name[0]);
    const instance = name === undefined || type === undefined ? undefined : this.instanceId(type, name[1]);
    const role = name === undefined ? undefined : this.roles.get(resourceRoleName(name[0], data.role));
    if (instance === undefined || role === undefined) return;
    const byUser = this.userInstanceRoles[user];
    const at = findRecord(byUser, 3, instance, role);
    if (byUser === undefined || at < 0) return;
    setSlot(this.userInstanceRoles, user, removeRecordAt(byUser, 3, at));
    this.removeFromInstance(instance, user, role);
  }

  private removeTenantRole(user: number, tenant: number, role: number): void {
    const list = this.userTenantRoles[user];
    const at = findRecord(list, 2, tenant, role);
    if (list === undefined || at < 0) return;
    const rest = removeRecordAt(list, 2, at);
    setSlot(this.userTenantRoles, user, rest);
    for (let i = 0; rest !== undefined && i < rest.length; i += 2) if (rest[i] === tenant) return;
    removeMember(this.tenantMembers[tenant], user);
  }

  private removeFromInstance(instance: number, user: number, role: number): void {
    const list = this.instanceAssignees[instance];
    const at = findRecord(list, 3, user, role);
    if (list !== undefined && at >= 0) setSlot(this.instanceAssignees, instance, removeRecordAt(list, 3, at));
  }

  private removeInstanceRolesWhere(
    user: number,
    matches: (instance: number, role: number, tenant: number) => boolean,
  ): void {
    const rest = removeRecordsWhere(this.userInstanceRoles[user], 3, (list, i) => {
      const instance = list[i] as number;
      const role = list[i + 1] as number;
      if (!matches(instance, role, list[i + 2] as number)) return false;
      this.removeFromInstance(instance, user, role);
      return true;
    });
    setSlot(this.userInstanceRoles, user, rest);
  }

  /** Deletes every assignment of a tenant-level role (the role was deleted). */
  deleteTenantRoleAssignments(role: string): void {
    const roleId = this.roles.get(role);
    if (roleId === undefined) return;
    for (let user = 0; user < this.userTenantRoles.length; user++) {
      const list = this.userTenantRoles[user];
      const tenants: number[] = [];
      for (let i = 0; list !== undefined && i < list.length; i += 2) {
        if (list[i + 1] === roleId) tenants.push(list[i] as number);
      }
      for (const tenant of tenants) this.removeTenantRole(user, tenant, roleId);
    }
  }

  /** Deletes every assignment of a resource role (the role was removed from its resource). */
  deleteResourceRoleAssignments(resource: string, role: string): void {
    const roleId = this.roles.get(resourceRoleName(resource, role));
    const typeId = this.types.get(resource);
    if (roleId === undefined || typeId === undefined) return;
    for (const instance of this.instancesByType[typeId]?.values() ?? []) {
      const assignees = this.instanceAssignees[instance];
      const users: number[] = [];
      for (let i = 0; assignees !== undefined && i < assignees.length; i += 3) {
        if (assignees[i + 1] === roleId) users.push(assignees[i] as number);
      }
      for (const user of users) {
        this.removeInstanceRolesWhere(user, (inst, r) => inst === instance && r === roleId);
      }
    }
  }
}
