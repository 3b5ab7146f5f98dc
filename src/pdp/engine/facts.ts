// The fact store: users, tenants, resource instances, role assignments and relationship tuples, kept as integer
// ids in flat adjacency lists (see adjacency.ts) so that a fact costs a few array slots, not an object.
// Every change touches only the lists of the nodes it names; nothing here is rebuilt from scratch.

import { AdjacencyLists } from "./adjacency.ts";
import type { UserProfile } from "./conditions.ts";
import { Interner } from "./interner.ts";
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

/** Rewrites the third field of the record (a, b, _) in the node's list of triples. */
function setThird(lists: AdjacencyLists, node: number, a: number, b: number, value: number): void {
  const at = lists.find(node, a, b);
  if (at >= 0) lists.data[at + 2] = value;
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

  /** user -> [tenant, role, ...] tenant-level role assignments */
  readonly userTenantRoles = new AdjacencyLists(2);
  /** tenant -> users holding at least one tenant role there (for authorized-users and tenant cascades) */
  readonly tenantMembers: (Set<number> | undefined)[] = [];
  /** user -> [instance, role, tenant, ...] instance role assignments */
  readonly userInstanceRoles = new AdjacencyLists(3);
  /** instance -> [user, role, tenant, ...] the same assignments, seen from the instance */
  readonly instanceAssignees = new AdjacencyLists(3);
  /** object instance -> [subject, relation, tenant, ...] */
  readonly tuplesIn = new AdjacencyLists(3);
  /** subject instance -> [object, relation, tenant, ...] */
  readonly tuplesOut = new AdjacencyLists(3);

  private readonly roleDisplayKeys: string[] = [];
  /** By type id: resource role key -> role id, so that an instance assignment needs no "<type>#<role>" string. */
  private readonly resourceRoleIds: (Map<string, number> | undefined)[] = [];

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
    const fromUser = this.userInstanceRoles.count(user) <= this.instanceAssignees.count(instance);
    const lists = fromUser ? this.userInstanceRoles : this.instanceAssignees;
    const node = fromUser ? user : instance;
    const match = fromUser ? instance : user;
    const { data } = lists;
    for (let i = lists.begin(node), end = lists.end(node); i < end; i += 3) {
      if (data[i] === match && data[i + 2] === tenant) return true;
    }
    return false;
  }

  /** After a bulk load: gives back the lists' spare room. */
  trim(): void {
    for (const lists of [
      this.userTenantRoles,
      this.userInstanceRoles,
      this.instanceAssignees,
      this.tuplesIn,
      this.tuplesOut,
    ]) {
      lists.trim();
    }
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
    this.userProfiles[id] = Object.keys(profile).length === 0 ? EMPTY_PROFILE : profile;
  }

  deleteUser(key: string): void {
    const user = this.users.get(key);
    if (user === undefined) return;
    const tenantRoles = this.userTenantRoles;
    for (let i = tenantRoles.begin(user), end = tenantRoles.end(user); i < end; i += 2) {
      this.tenantMembers[tenantRoles.data[i] as number]?.delete(user);
    }
    tenantRoles.clear(user);
    const instanceRoles = this.userInstanceRoles;
    for (let i = instanceRoles.begin(user), end = instanceRoles.end(user); i < end; i += 3) {
      this.removeFromInstance(instanceRoles.data[i] as number, user, instanceRoles.data[i + 1] as number);
    }
    instanceRoles.clear(user);
    this.userProfiles[user] = undefined;
  }

  upsertTenant(data: TenantData): void {
    this.tenantRecords[this.tenants.intern(data.key)] = {
      attributes: copyAttributes(data.attributes) ?? EMPTY_ATTRIBUTES,
    };
  }

  /** Deletes the tenant and every role assignment (tenant or instance level) made in it. */
  deleteTenant(key: string): void {
    const tenant = this.tenants.get(key);
    if (tenant === undefined) return;
    for (const user of this.tenantMembers[tenant] ?? []) {
      this.userTenantRoles.removeWhere(user, (data, i) => data[i] === tenant);
    }
    this.tenantMembers[tenant] = undefined;
    for (let user = 0; user < this.users.size; user++) {
      this.removeInstanceRolesWhere(user, (_instance, _role, t) => t === tenant);
    }
    this.tenantRecords[tenant] = undefined;
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
    }
    if (this.instanceTenant[id] === NO_TENANT) this.instanceTenant[id] = tenant;
    return id;
  }

  upsertInstance(data: ResourceInstanceData): void {
    const tenant = this.tenants.intern(data.tenant);
    const id = this.ensureInstance(data.resource, data.key, tenant);
    this.instanceTenant[id] = tenant;
    this.instanceAttributes[id] = copyAttributes(data.attributes);
  }

  /** Deletes the instance with its tuples (both directions) and the role assignments on it. */
  deleteInstance(type: string, key: string): void {
    const typeId = this.types.get(type);
    const id = typeId === undefined ? undefined : this.instanceId(typeId, key);
    if (id !== undefined) this.deleteInstanceById(id);
  }

  private deleteInstanceById(id: number): void {
    // Each loop reads one store and writes another, so the slots it walks stay in place; a self-loop tuple is in
    // both lists of the instance, which are cleared whole.
    const { tuplesIn, tuplesOut, instanceAssignees, userInstanceRoles } = this;
    for (let i = tuplesIn.begin(id), end = tuplesIn.end(id); i < end; i += 3) {
      const subject = tuplesIn.data[i] as number;
      if (subject !== id) this.removeTupleRecord(tuplesOut, subject, id, tuplesIn.data[i + 1] as number);
    }
    tuplesIn.clear(id);
    for (let i = tuplesOut.begin(id), end = tuplesOut.end(id); i < end; i += 3) {
      const object = tuplesOut.data[i] as number;
      if (object !== id) this.removeTupleRecord(tuplesIn, object, id, tuplesOut.data[i + 1] as number);
    }
    tuplesOut.clear(id);
    for (let i = instanceAssignees.begin(id), end = instanceAssignees.end(id); i < end; i += 3) {
      const user = instanceAssignees.data[i] as number;
      const at = userInstanceRoles.find(user, id, instanceAssignees.data[i + 1] as number);
      if (at >= 0) userInstanceRoles.removeAt(user, at);
    }
    instanceAssignees.clear(id);
    this.instanceTenant[id] = NO_TENANT;
    this.instanceAttributes[id] = undefined;
  }

  deleteInstancesOfType(type: string): void {
    const typeId = this.types.get(type);
    const byKey = typeId === undefined ? undefined : this.instancesByType[typeId];
    for (const id of byKey?.values() ?? []) {
      if (this.instanceExists(id)) this.deleteInstanceById(id);
    }
  }

  // ---- relationship tuples ----

  private removeTupleRecord(lists: AdjacencyLists, node: number, other: number, relation: number) {
    const at = lists.find(node, other, relation);
    if (at >= 0) lists.removeAt(node, at);
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
    const { tuplesIn, tuplesOut } = this;
    // Look in the shorter list: a folder may have 100k children while each child has one parent.
    const exists =
      tuplesOut.count(subject) <= tuplesIn.count(object)
        ? tuplesOut.find(subject, object, relation) >= 0
        : tuplesIn.find(object, subject, relation) >= 0;
    if (exists) {
      // Same (subject, relation, object): only the tenant can change.
      setThird(tuplesOut, subject, object, relation, tenant);
      setThird(tuplesIn, object, subject, relation, tenant);
      return;
    }
    tuplesOut.append(subject, object, relation, tenant);
    tuplesIn.append(object, subject, relation, tenant);
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
      if (this.userTenantRoles.find(user, tenant, role) >= 0) return;
      this.userTenantRoles.append(user, tenant, role);
      let members = this.tenantMembers[tenant];
      if (members === undefined) {
        members = new Set();
        this.tenantMembers[tenant] = members;
      }
      members.add(user);
      return;
    }
    const name = parseInstanceName(data.resource_instance);
    if (name === undefined) return;
    const instance = this.ensureInstance(name[0], name[1], tenant);
    const role = this.resourceRoleId(this.instanceType[instance] as number, name[0], data.role);
    const byUser = this.userInstanceRoles;
    const byInstance = this.instanceAssignees;
    const exists =
      byUser.count(user) <= byInstance.count(instance)
        ? byUser.find(user, instance, role) >= 0
        : byInstance.find(instance, user, role) >= 0;
    if (exists) {
      setThird(byUser, user, instance, role, tenant);
      setThird(byInstance, instance, user, role, tenant);
      return;
    }
    byUser.append(user, instance, role, tenant);
    byInstance.append(instance, user, role, tenant);
  }

  /** Interns the resource role (ids are never reused, so the cache never goes stale). */
  private resourceRoleId(type: number, typeKey: string, roleKey: string): number {
    let byKey = this.resourceRoleIds[type];
    if (byKey === undefined) {
      byKey = new Map();
      this.resourceRoleIds[type] = byKey;
    }
    let role = byKey.get(roleKey);
    if (role === undefined) {
      role = this.roles.intern(resourceRoleName(typeKey, roleKey));
      byKey.set(roleKey, role);
    }
    return role;
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
    const at = this.userInstanceRoles.find(user, instance, role);
    if (at < 0) return;
    this.userInstanceRoles.removeAt(user, at);
    this.removeFromInstance(instance, user, role);
  }

  private removeTenantRole(user: number, tenant: number, role: number): void {
    const lists = this.userTenantRoles;
    const at = lists.find(user, tenant, role);
    if (at < 0) return;
    lists.removeAt(user, at);
    for (let i = lists.begin(user), end = lists.end(user); i < end; i += 2) {
      if (lists.data[i] === tenant) return;
    }
    this.tenantMembers[tenant]?.delete(user);
  }

  private removeFromInstance(instance: number, user: number, role: number): void {
    const at = this.instanceAssignees.find(instance, user, role);
    if (at >= 0) this.instanceAssignees.removeAt(instance, at);
  }

  private removeInstanceRolesWhere(
    user: number,
    matches: (instance: number, role: number, tenant: number) => boolean,
  ): void {
    this.userInstanceRoles.removeWhere(user, (data, i) => {
      const instance = data[i] as number;
      const role = data[i + 1] as number;
      if (!matches(instance, role, data[i + 2] as number)) return false;
      this.removeFromInstance(instance, user, role);
      return true;
    });
  }

  /** Deletes every assignment of a tenant-level role (the role was deleted). */
  deleteTenantRoleAssignments(role: string): void {
    const roleId = this.roles.get(role);
    if (roleId === undefined) return;
    const lists = this.userTenantRoles;
    for (let user = 0; user < this.users.size; user++) {
      const tenants: number[] = [];
      for (let i = lists.begin(user), end = lists.end(user); i < end; i += 2) {
        if (lists.data[i + 1] === roleId) tenants.push(lists.data[i] as number);
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
      const assignees = this.instanceAssignees;
      const users: number[] = [];
      for (let i = assignees.begin(instance), end = assignees.end(instance); i < end; i += 3) {
        if (assignees.data[i + 1] === roleId) users.push(assignees.data[i] as number);
      }
      for (const user of users) {
        this.removeInstanceRolesWhere(user, (inst, r) => inst === instance && r === roleId);
      }
    }
  }
}
