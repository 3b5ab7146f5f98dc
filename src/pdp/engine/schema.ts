// The schema (resources, tenant roles, condition sets and their rules) as the engine keeps it, its cascades, and
// its compilation into the id-indexed tables the decision functions read. The schema is small and changes rarely,
// so every schema change recompiles it whole; facts are never touched by a recompile.

import { compileConditions, type Predicate } from "./conditions.ts";
import { resourceRoleName, type FactStore } from "./facts.ts";
import { Interner } from "./interner.ts";
import { setEntry } from "./journal.ts";
import type {
  ConditionSetData,
  ConditionSetRuleData,
  DerivationRuleData,
  ResourceData,
  ResourceRoleData,
  TenantRoleData,
} from "./types.ts";

export function setRuleKey(rule: ConditionSetRuleData): string {
  return `${rule.user_set}\u0000${rule.permission}\u0000${rule.resource_set}`;
}

/** The schema as last applied, keyed by key. Stored objects are never mutated; cascades store edited copies. */
export class SchemaStore {
  readonly resources = new Map<string, ResourceData>();
  readonly tenantRoles = new Map<string, TenantRoleData>();
  readonly conditionSets = new Map<string, ConditionSetData>();
  readonly setRules = new Map<string, ConditionSetRuleData>();

  deleteConditionSet(key: string): void {
    setEntry(this.conditionSets, key, undefined);
    for (const [ruleKey, rule] of this.setRules) {
      if (rule.user_set === key || rule.resource_set === key) setEntry(this.setRules, ruleKey, undefined);
    }
  }

  deleteTenantRole(key: string): void {
    setEntry(this.tenantRoles, key, undefined);
    for (const role of this.tenantRoles.values()) {
      if (role.extends?.includes(key)) {
        setEntry(this.tenantRoles, role.key, { ...role, extends: role.extends.filter((k) => k !== key) });
      }
    }
  }

  /**
   * Deletes a resource type and what names it elsewhere in the schema: relations whose subject it is, derivation
   * rules on it, tenant-role permissions on it, resourcesets bound to it and set rules on its permissions.
   */
  deleteResource(key: string): void {
    setEntry(this.resources, key, undefined);
    for (const resource of this.resources.values()) {
      const edited = withoutSubjectResource(resource, key);
      if (edited !== resource) setEntry(this.resources, resource.key, edited);
    }
    const prefix = `${key}:`;
    for (const role of this.tenantRoles.values()) {
      if (role.permissions?.some((p) => p.startsWith(prefix))) {
        setEntry(this.tenantRoles, role.key, {
          ...role,
          permissions: role.permissions.filter((p) => !p.startsWith(prefix)),
        });
      }
    }
    for (const set of [...this.conditionSets.values()]) {
      if (set.type === "resourceset" && set.resource === key) this.deleteConditionSet(set.key);
    }
    for (const [ruleKey, rule] of this.setRules) {
      if (rule.permission.startsWith(prefix)) setEntry(this.setRules, ruleKey, undefined);
    }
  }
}

function withoutSubjectResource(resource: ResourceData, removed: string): ResourceData {
  const relations = Object.entries(resource.relations ?? {});
  const roles = Object.entries(resource.roles ?? {});
  const usesRemoved = (rule: DerivationRuleData) => rule.on_resource === removed;
  const touched =
    relations.some(([, subject]) => subject === removed) ||
    roles.some(([, role]) => role.granted_to?.users_with_role?.some(usesRemoved));
  if (!touched) return resource;
  return {
    ...resource,
    relations: Object.fromEntries(relations.filter(([, subject]) => subject !== removed)),
    roles: Object.fromEntries(
      roles.map(([roleKey, role]): [string, ResourceRoleData] => {
        const rules = role.granted_to?.users_with_role;
        if (rules === undefined || !rules.some(usesRemoved)) return [roleKey, role];
        return [
          roleKey,
          {
            ...role,
            granted_to: { ...role.granted_to, users_with_role: rules.filter((r) => !usesRemoved(r)) },
          },
        ];
      }),
    ),
  };
}

/** "Holders of `role` on an instance of the rule's object type get it when they hold `requires` on a subject." */
export interface CompiledRule {
  role: number;
  requires: number;
  subjectType: number;
  relation: number;
  /** no_direct_roles_on_object: the rule is off for users with any direct role on the object instance. */
  noDirectRoles: boolean;
}

export interface AbacRule {
  userSet: string;
  resourceSet: string;
  matchesUser: Predicate;
  matchesResource: Predicate;
  /** The sets' condition documents, which filter plans evaluate partially (filter-plan.ts). */
  userConditions: unknown;
  resourceConditions: unknown;
}

/** Id-indexed tables the decision functions read. Built by compileSchema, never edited afterwards. */
export interface CompiledSchema {
  /** type id -> action key -> permission id, for defined resource types only */
  readonly actionPermissions: (Map<string, number> | undefined)[];
  /** permission id -> type id */
  readonly permissionType: Int32Array;
  /** permission id -> "type:action" */
  readonly permissionNames: readonly string[];
  /** role id -> bitset over permission ids (the role's own permissions plus those of the roles it extends) */
  readonly rolePermissionBits: (Uint32Array | undefined)[];
  /** role id -> permission ids (same content as the bitset, for listings) */
  readonly rolePermissions: (number[] | undefined)[];
  /** type id -> its resource role ids */
  readonly resourceRoles: (number[] | undefined)[];
  /** permission id -> resource roles (of the permission's type) whose holders get the permission */
  readonly rolesGranting: (number[] | undefined)[];
  /** role id -> the roles holding it implies: itself and everything it extends, transitively */
  readonly impliedRoles: (number[] | undefined)[];
  /** role id -> the roles whose holders hold it: itself and every role extending it, transitively */
  readonly impliers: (number[] | undefined)[];
  /** role id -> derivation rules granting that role */
  readonly rulesByRole: (CompiledRule[] | undefined)[];
  /** object type id -> relation id -> derivation rules linked by that relation */
  readonly rulesByObjectRelation: ((CompiledRule[] | undefined)[] | undefined)[];
  /** permission id -> attribute-based rules granting it */
  readonly abacRules: (AbacRule[] | undefined)[];
}

function roleClosure(start: string, extendsOf: (key: string) => readonly string[] | undefined): string[] {
  const seen = new Set<string>([start]);
  const stack = [start];
  while (stack.length > 0) {
    for (const next of extendsOf(stack.pop() as string) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  return [...seen];
}

function push<T>(table: (T[] | undefined)[], index: number, value: T): void {
  const list = table[index];
  if (list === undefined) table[index] = [value];
  else if (!list.includes(value)) list.push(value);
}

/** Permission ids granted by naming an action or an action group on a resource type; empty when neither is defined. */
type Expand = (resource: string, actionOrGroup: string) => number[];

/**
 * Compiles the schema into the tables the decision functions read. The steps intern type, role, relation and
 * permission names as they go, in a fixed order, so the same schema gets the same ids.
 */
export function compileSchema(
  schema: SchemaStore,
  facts: FactStore,
  permissionIds: Interner,
): CompiledSchema {
  const { actionPermissions, expand } = actionTables(schema, facts, permissionIds);
  const rolePermissions: (number[] | undefined)[] = [];
  tenantRolePermissions(schema, facts, expand, rolePermissions);
  const { resourceRoles, impliedRoles, impliers } = resourceRoleTables(
    schema,
    facts,
    expand,
    rolePermissions,
  );
  const permissionType = permissionTypes(facts, permissionIds);
  const { rolePermissionBits, rolesGranting } = permissionIndexes(
    rolePermissions,
    resourceRoles,
    permissionIds.size,
  );
  const { rulesByRole, rulesByObjectRelation } = derivationTables(schema, facts);
  return {
    actionPermissions,
    permissionType,
    permissionNames: permissionIds.keys,
    rolePermissionBits,
    rolePermissions,
    resourceRoles,
    rolesGranting,
    impliedRoles,
    impliers,
    rulesByRole,
    rulesByObjectRelation,
    abacRules: abacTables(schema, expand),
  };
}

/** Each resource type's actions as permission ids, and how an action or action group expands to them. */
function actionTables(schema: SchemaStore, { types }: FactStore, permissionIds: Interner) {
  const actionPermissions: (Map<string, number> | undefined)[] = [];
  const groups = new Map<string, Record<string, string[]>>();

  for (const resource of schema.resources.values()) {
    const actions = new Map<string, number>();
    for (const action of resource.actions)
      actions.set(action, permissionIds.intern(`${resource.key}:${action}`));
    actionPermissions[types.intern(resource.key)] = actions;
    groups.set(resource.key, resource.action_groups ?? {});
  }

  const expand: Expand = (resource, actionOrGroup) => {
    const typeId = types.get(resource);
    const actions = typeId === undefined ? undefined : actionPermissions[typeId];
    if (actions === undefined) return [];
    const single = actions.get(actionOrGroup);
    if (single !== undefined) return [single];
    const resourceGroups = groups.get(resource) ?? {};
    const group = Object.hasOwn(resourceGroups, actionOrGroup) ? resourceGroups[actionOrGroup] : undefined;
    return group?.flatMap((a) => actions.get(a) ?? []) ?? [];
  };
  return { actionPermissions, expand };
}

/** Each tenant role's permissions (`type:action`), its own and those of the roles it extends, into `rolePermissions`. */
function tenantRolePermissions(
  schema: SchemaStore,
  { roles }: FactStore,
  expand: Expand,
  rolePermissions: (number[] | undefined)[],
): void {
  for (const role of schema.tenantRoles.values()) {
    const permissions = new Set<number>();
    const closure = roleClosure(role.key, (k) => schema.tenantRoles.get(k)?.extends);
    for (const member of closure) {
      for (const permission of schema.tenantRoles.get(member)?.permissions ?? []) {
        const colon = permission.indexOf(":");
        if (colon > 0)
          for (const p of expand(permission.slice(0, colon), permission.slice(colon + 1))) permissions.add(p);
      }
    }
    rolePermissions[roles.intern(role.key)] = [...permissions];
  }
}

/**
 * Each resource role's permissions (into `rolePermissions`), the roles of each type, and which roles imply which
 * (a role extends only roles of its own resource).
 */
function resourceRoleTables(
  schema: SchemaStore,
  { types, roles }: FactStore,
  expand: Expand,
  rolePermissions: (number[] | undefined)[],
) {
  const impliedRoles: (number[] | undefined)[] = [];
  const impliers: (number[] | undefined)[] = [];
  const resourceRoles: (number[] | undefined)[] = [];
  for (const resource of schema.resources.values()) {
    const typeId = types.intern(resource.key);
    const ownRoles = resource.roles ?? {};
    const roleIdOf = (key: string) => roles.intern(resourceRoleName(resource.key, key));
    for (const roleKey of Object.keys(ownRoles)) {
      const roleId = roleIdOf(roleKey);
      push(resourceRoles, typeId, roleId);
      const closure = roleClosure(roleKey, (k) =>
        Object.hasOwn(ownRoles, k)
          ? ownRoles[k]?.extends?.filter((e) => Object.hasOwn(ownRoles, e))
          : undefined,
      );
      const permissions = new Set<number>();
      for (const member of closure) {
        push(impliedRoles, roleId, roleIdOf(member));
        push(impliers, roleIdOf(member), roleId);
        for (const permission of ownRoles[member]?.permissions ?? []) {
          const bare = permission.startsWith(`${resource.key}:`)
            ? permission.slice(resource.key.length + 1)
            : permission;
          for (const p of expand(resource.key, bare)) permissions.add(p);
        }
      }
      rolePermissions[roleId] = [...permissions];
    }
  }
  return { resourceRoles, impliedRoles, impliers };
}

/** permission id -> the id of its resource type. */
function permissionTypes({ types }: FactStore, permissionIds: Interner): Int32Array {
  const permissionType = new Int32Array(permissionIds.size);
  for (let p = 0; p < permissionIds.size; p++) {
    const name = permissionIds.keyOf(p);
    permissionType[p] = types.intern(name.slice(0, name.indexOf(":")));
  }
  return permissionType;
}

/** Each role's permissions as a bitset, and for each permission the resource roles granting it. */
function permissionIndexes(
  rolePermissions: (number[] | undefined)[],
  resourceRoles: (number[] | undefined)[],
  permissionCount: number,
) {
  const rolePermissionBits: (Uint32Array | undefined)[] = [];
  const rolesGranting: (number[] | undefined)[] = [];
  const words = (permissionCount + 31) >>> 5;
  rolePermissions.forEach((permissions, roleId) => {
    if (permissions === undefined) return;
    const bits = new Uint32Array(words);
    for (const p of permissions) bits[p >>> 5] = (bits[p >>> 5] as number) | (1 << (p & 31));
    rolePermissionBits[roleId] = bits;
  });
  for (const typeRoles of resourceRoles) {
    for (const roleId of typeRoles ?? []) {
      for (const p of rolePermissions[roleId] ?? []) push(rolesGranting, p, roleId);
    }
  }
  return { rolePermissionBits, rolesGranting };
}

/** The derivation rules that hold, by the role they grant and by the object type and relation they go through. */
function derivationTables(schema: SchemaStore, { types, roles, relations }: FactStore) {
  const rulesByRole: (CompiledRule[] | undefined)[] = [];
  const rulesByObjectRelation: ((CompiledRule[] | undefined)[] | undefined)[] = [];
  for (const resource of schema.resources.values()) {
    const objectType = types.intern(resource.key);
    for (const [roleKey, role] of Object.entries(resource.roles ?? {})) {
      for (const rule of role.granted_to?.users_with_role ?? []) {
        const subject = schema.resources.get(rule.on_resource);
        const relationSubject = resource.relations?.[rule.linked_by_relation];
        // A rule only works through a relation of this resource whose subject is the rule's resource.
        if (subject === undefined || relationSubject !== rule.on_resource) continue;
        if (!Object.hasOwn(subject.roles ?? {}, rule.role)) continue;
        const compiled: CompiledRule = {
          role: roles.intern(resourceRoleName(resource.key, roleKey)),
          requires: roles.intern(resourceRoleName(subject.key, rule.role)),
          subjectType: types.intern(subject.key),
          relation: relations.intern(rule.linked_by_relation),
          noDirectRoles: Boolean(
            rule.when?.no_direct_roles_on_object || role.granted_to?.when?.no_direct_roles_on_object,
          ),
        };
        push(rulesByRole, compiled.role, compiled);
        let byRelation = rulesByObjectRelation[objectType];
        if (byRelation === undefined) {
          byRelation = [];
          rulesByObjectRelation[objectType] = byRelation;
        }
        push(byRelation, compiled.relation, compiled);
      }
    }
  }
  return { rulesByRole, rulesByObjectRelation };
}

/** permission id -> the set rules granting it (a user set and a resource set of its type, both compiled). */
function abacTables(schema: SchemaStore, expand: Expand): (AbacRule[] | undefined)[] {
  const predicates = new Map<string, { set: ConditionSetData; predicate: Predicate }>();
  for (const set of schema.conditionSets.values()) {
    predicates.set(set.key, { set, predicate: compileConditions(set.conditions).predicate });
  }
  const abacRules: (AbacRule[] | undefined)[] = [];
  for (const rule of schema.setRules.values()) {
    const userSet = predicates.get(rule.user_set);
    const resourceSet = predicates.get(rule.resource_set);
    if (userSet?.set.type !== "userset" || resourceSet?.set.type !== "resourceset") continue;
    const colon = rule.permission.indexOf(":");
    const resource = rule.permission.slice(0, colon);
    if (colon <= 0 || (resourceSet.set.resource && resourceSet.set.resource !== resource)) continue;
    const compiled: AbacRule = {
      userSet: rule.user_set,
      resourceSet: rule.resource_set,
      matchesUser: userSet.predicate,
      matchesResource: resourceSet.predicate,
      userConditions: userSet.set.conditions,
      resourceConditions: resourceSet.set.conditions,
    };
    for (const p of expand(resource, rule.permission.slice(colon + 1))) push(abacRules, p, compiled);
  }
  return abacRules;
}

export function hasPermission(bits: Uint32Array | undefined, permission: number): boolean {
  return bits !== undefined && (((bits[permission >>> 5] as number) >>> (permission & 31)) & 1) === 1;
}
