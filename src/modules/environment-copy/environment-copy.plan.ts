import type { Insertable, Selectable } from "kysely";
import type { Database } from "../../db/types.ts";
import { newId } from "../../lib/ids.ts";
import type { IdTable, PolicyRows, PolicyTable } from "./environment-copy.repo.ts";

// Over 500 lines on purpose: one pure planner, read top to bottom in the order a copy runs (scope, conflicts,
// resources, their parts, relations, tenant roles, links, condition sets, set rules); its steps share the Planner
// and the resolvers, and each is a short function. Split across files, a reader would hop between them to follow
// one copy.

/**
 * Plans a copy of one environment's policy into another, as data: what to insert, update and delete in the
 * target. Pure (no database), so the rules are easy to read and to test:
 *
 * - The scope selects resources (each with all its actions, attributes, action groups, roles and relations),
 *   tenant roles and condition sets (user sets and resource sets) by key.
 * - An object whose key is free in the target is inserted with a new id. A selected resource, tenant role or
 *   condition set whose key is taken is a conflict: with `fail` nothing is written; with `overwrite` the target's
 *   object keeps its id (so facts that name it stay) and becomes equal to the source's: fields updated, parts
 *   matched by key updated, parts the source lacks deleted, links (permissions, parents, derivations, group
 *   members) replaced. Built-in resources are never conflicts: without `overwrite`, missing parts are added.
 * - A reference to an object that is not copied (say a tenant role's permission on a resource left out by the
 *   scope) is linked to the target's object with the same key when there is one, and left out otherwise.
 * - Set rules are copied when one of their condition sets is, and all they name exists in the target.
 */

export interface CopyFilter {
  include?: string[] | undefined;
  exclude?: string[] | undefined;
}

export interface CopyScope {
  resources?: CopyFilter | undefined;
  roles?: CopyFilter | undefined;
  user_sets?: CopyFilter | undefined;
  resource_sets?: CopyFilter | undefined;
}

export interface CopyTarget {
  id: string;
  organization_id: string;
  project_id: string;
}

export interface CopyConflicts {
  resources: string[];
  roles: string[];
  condition_sets: string[];
}

type Inserts = { [T in PolicyTable]: Insertable<Database[T]>[] };
type PartTable = "resource_actions" | "resource_attributes" | "action_groups" | "roles" | "relations";

export interface CopyUpdate {
  table: IdTable;
  id: string;
  /** changed columns only */
  patch: Record<string, unknown>;
}

export interface CopyPlan {
  conflicts: CopyConflicts;
  /** Parts of overwritten resources to delete (their dependants go with them through the foreign keys). */
  deletes: { [T in PartTable]: string[] };
  /** Links owned by these target rows are deleted before the new links are inserted. */
  clearLinks: {
    action_group_actions: string[];
    role_permissions: string[];
    role_extends: string[];
    role_derivations: string[];
  };
  updates: CopyUpdate[];
  inserts: Inserts;
  /** Condition set parents, set after every set exists. */
  parents: { id: string; parent_id: string | null }[];
}

/** `*` matches any run of characters; greedy with one backtrack point, at most |pattern|·|text| steps, so a hostile pattern cannot stall the worker. */
export function globMatch(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

export function selects(filter: CopyFilter | undefined): (key: string) => boolean {
  const include = filter?.include ?? [];
  const exclude = filter?.exclude ?? [];
  return (key) =>
    (include.length === 0 || include.some((p) => globMatch(p, key))) &&
    !exclude.some((p) => globMatch(p, key));
}

const SEP = "\u0000";

/** Identities by key: what makes a source object and a target object "the same". */
function identities(rows: PolicyRows) {
  const resourceKey = new Map(rows.resources.map((r) => [r.id, r.key]));
  const ownerKey = (resourceId: string | null) =>
    resourceId === null ? "" : (resourceKey.get(resourceId) ?? `?${resourceId}`);
  const action = new Map(rows.actions.map((a) => [a.id, ownerKey(a.resource_id) + SEP + a.key]));
  const role = new Map(rows.roles.map((r) => [r.id, ownerKey(r.resource_id) + SEP + r.key]));
  const relation = new Map(rows.relations.map((r) => [r.id, ownerKey(r.object_resource_id) + SEP + r.key]));
  const set = new Map(rows.conditionSets.map((s) => [s.id, s.key]));
  return { resourceKey, action, role, relation, set };
}

const invert = (map: Map<string, string>) => new Map([...map].map(([id, ident]) => [ident, id]));

function groupBy<T>(items: T[], keyOf: (item: T) => string | null): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === null) continue;
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}

/** The fields of `next` that differ from `current`, or null when none does. */
function diff(current: object, next: object): Record<string, unknown> | null {
  const patch: Record<string, unknown> = {};
  let changed = false;
  for (const [key, value] of Object.entries(next)) {
    if ((current as Record<string, unknown>)[key] !== value) {
      patch[key] = value;
      changed = true;
    }
  }
  return changed ? patch : null;
}

export function planCopy(input: {
  source: PolicyRows;
  target: PolicyRows;
  targetEnv: CopyTarget;
  scope: CopyScope;
  strategy: "fail" | "overwrite";
  at: string;
}): CopyPlan {
  const { source, target, targetEnv, strategy, at } = input;
  const selected = selectScope(source, input.scope);
  const plan = emptyPlan(findConflicts(selected, target));
  const { conflicts } = plan;
  const hasConflicts =
    conflicts.resources.length + conflicts.roles.length + conflicts.condition_sets.length > 0;
  if (hasConflicts && strategy === "fail") return plan;

  const p: Planner = {
    src: source,
    tgt: target,
    strategy,
    at,
    scoped: {
      organization_id: targetEnv.organization_id,
      project_id: targetEnv.project_id,
      environment_id: targetEnv.id,
    },
    plan,
    map: {
      resource: new Map(),
      action: new Map(),
      group: new Map(),
      role: new Map(),
      relation: new Map(),
      set: new Map(),
    },
    linkedRoles: new Set(),
    linkedGroups: new Set(),
  };
  const resolve = resolvers(p, selected);
  const resources = copyResources(p, selected.resources);
  copyResourceParts(p, resources);
  // Relations need every copied resource first: their subject may be any of them (or the target's own).
  copyRelations(p, resources, resolve.resource);
  copyTenantRoles(p, selected.tenantRoles);
  copyLinks(p, resolve);
  copyConditionSets(p, selected.sets, resolve);
  copySetRules(p, resolve);
  return plan;
}

type Row<K extends keyof PolicyRows> = PolicyRows[K][number];
type MergeMode = "new" | "replace" | "add";

/** What the scope selects from the source. */
interface Selection {
  resources: Row<"resources">[];
  tenantRoles: Row<"roles">[];
  sets: Row<"conditionSets">[];
}

/** What the steps of a plan share: the rows, the plan they fill and what they have copied so far. */
interface Planner {
  src: PolicyRows;
  tgt: PolicyRows;
  strategy: "fail" | "overwrite";
  at: string;
  /** The target environment's columns of every inserted row. */
  scoped: { organization_id: string; project_id: string; environment_id: string };
  plan: CopyPlan;
  /** Source id -> target id for everything copied; references to the rest resolve by key (`resolvers`). */
  map: { [K in "resource" | "action" | "group" | "role" | "relation" | "set"]: Map<string, string> };
  /** Copied roles and groups whose links are written from the source's (all, except "add" matches). */
  linkedRoles: Set<string>;
  linkedGroups: Set<string>;
}

/** A copied resource, the target's resource it becomes, and how its parts merge into that one. */
interface CopiedResource {
  source: Row<"resources">;
  targetId: string;
  mode: MergeMode;
}

type Resolvers = ReturnType<typeof resolvers>;

function emptyPlan(conflicts: CopyConflicts): CopyPlan {
  return {
    conflicts,
    deletes: { resource_actions: [], resource_attributes: [], action_groups: [], roles: [], relations: [] },
    clearLinks: { action_group_actions: [], role_permissions: [], role_extends: [], role_derivations: [] },
    updates: [],
    inserts: {
      resources: [],
      resource_actions: [],
      resource_attributes: [],
      action_groups: [],
      action_group_actions: [],
      roles: [],
      role_permissions: [],
      role_extends: [],
      relations: [],
      role_derivations: [],
      condition_sets: [],
      condition_set_rules: [],
    },
    parents: [],
  };
}

/** Plans an update of the fields of `next` that differ from the target's row, if any does. */
function update(p: Planner, table: IdTable, current: { id: string }, next: object): void {
  const patch = diff(current, next);
  if (patch) p.plan.updates.push({ table, id: current.id, patch: { ...patch, updated_at: p.at } });
}

/**
 * A copied object whose key the target has keeps the target's id (so facts that name it stay) and, when
 * `overwrite`, takes the source's fields; any other is inserted with a new id. Returns its id in the target.
 */
function copyObject(
  p: Planner,
  table: IdTable,
  map: Map<string, string> | null,
  source: { id: string; key: string; created_at: string },
  existing: { id: string } | undefined,
  overwrite: boolean,
  fields: object,
  insertOnly: object,
): string {
  if (existing) {
    map?.set(source.id, existing.id);
    if (overwrite) update(p, table, existing, fields);
    return existing.id;
  }
  const id = newId();
  map?.set(source.id, id);
  (p.plan.inserts[table] as object[]).push({
    ...p.scoped,
    id,
    key: source.key,
    ...fields,
    ...insertOnly,
    created_at: source.created_at,
    updated_at: p.at,
  });
  return id;
}

function selectScope(src: PolicyRows, scope: CopyScope): Selection {
  return {
    resources: src.resources.filter((r) => selects(scope.resources)(r.key)),
    tenantRoles: src.roles.filter((r) => r.resource_id === null && selects(scope.roles)(r.key)),
    sets: src.conditionSets.filter((s) =>
      selects(s.type === "resourceset" ? scope.resource_sets : scope.user_sets)(s.key),
    ),
  };
}

/** Selected objects whose key the target already has (built-in resources on both sides are no conflict). */
function findConflicts(selected: Selection, tgt: PolicyRows): CopyConflicts {
  const tgtResourceByKey = new Map(tgt.resources.map((r) => [r.key, r]));
  const tgtTenantRoleKeys = new Set(tgt.roles.filter((r) => r.resource_id === null).map((r) => r.key));
  const tgtSetKeys = new Set(tgt.conditionSets.map((s) => s.key));
  return {
    resources: selected.resources
      .filter((r) => {
        const existing = tgtResourceByKey.get(r.key);
        return existing && !(existing.built_in === 1 && r.built_in === 1);
      })
      .map((r) => r.key),
    roles: selected.tenantRoles.filter((r) => tgtTenantRoleKeys.has(r.key)).map((r) => r.key),
    condition_sets: selected.sets.filter((s) => tgtSetKeys.has(s.key)).map((s) => s.key),
  };
}

/**
 * Source id -> target id of anything a copied row refers to: the copy when it is copied (undefined until it is,
 * or when it is not copied after all), else the target's object with the same key.
 */
function resolvers(p: Planner, selected: Selection) {
  const { src, tgt, map } = p;
  const srcIds = identities(src);
  const tgtIds = identities(tgt);
  const selectedResourceIds = new Set(selected.resources.map((r) => r.id));
  const selectedRoleIds = new Set(selected.tenantRoles.map((r) => r.id));
  const selectedSetIds = new Set(selected.sets.map((s) => s.id));
  const tgtResourceIdByKey = new Map(tgt.resources.map((r) => [r.key, r.id]));
  const tgtActionIdByIdent = invert(tgtIds.action);
  const tgtRoleIdByIdent = invert(tgtIds.role);
  const tgtRelationIdByIdent = invert(tgtIds.relation);
  const tgtSetIdByKey = invert(tgtIds.set);
  const srcActionResource = new Map(src.actions.map((a) => [a.id, a.resource_id]));
  const srcRoleResource = new Map(src.roles.map((r) => [r.id, r.resource_id]));
  const srcRelationResource = new Map(src.relations.map((r) => [r.id, r.object_resource_id]));
  const copiedWithResource = (resourceId: string | null | undefined) =>
    resourceId !== null && resourceId !== undefined && selectedResourceIds.has(resourceId);

  return {
    resource: (id: string) =>
      map.resource.get(id) ??
      (selectedResourceIds.has(id) ? undefined : tgtResourceIdByKey.get(srcIds.resourceKey.get(id) ?? "")),
    action: (id: string) =>
      map.action.get(id) ??
      (copiedWithResource(srcActionResource.get(id))
        ? undefined
        : tgtActionIdByIdent.get(srcIds.action.get(id) ?? "")),
    role: (id: string) => {
      const owner = srcRoleResource.get(id);
      const copied = owner === null ? selectedRoleIds.has(id) : copiedWithResource(owner);
      return map.role.get(id) ?? (copied ? undefined : tgtRoleIdByIdent.get(srcIds.role.get(id) ?? ""));
    },
    relation: (id: string) =>
      map.relation.get(id) ??
      (copiedWithResource(srcRelationResource.get(id))
        ? undefined
        : tgtRelationIdByIdent.get(srcIds.relation.get(id) ?? "")),
    set: (id: string) =>
      map.set.get(id) ?? (selectedSetIds.has(id) ? undefined : tgtSetIdByKey.get(srcIds.set.get(id) ?? "")),
  };
}

/** The resources themselves: a free key is inserted, a taken one keeps the target's id (updated on overwrite). */
function copyResources(p: Planner, selected: Row<"resources">[]): CopiedResource[] {
  const tgtResourceByKey = new Map(p.tgt.resources.map((r) => [r.key, r]));
  return selected.map((r) => {
    const existing = tgtResourceByKey.get(r.key);
    const fields = {
      name: r.name,
      description: r.description,
      urn: r.urn,
      type_attributes: r.type_attributes,
    };
    const overwrite = p.strategy === "overwrite";
    const targetId = copyObject(p, "resources", p.map.resource, r, existing, overwrite, fields, {
      built_in: r.built_in,
    });
    return { source: r, targetId, mode: existing ? (overwrite ? "replace" : "add") : "new" };
  });
}

/**
 * Matches a resource's parts by key. New parts are inserted; in "replace" mode matching parts are updated
 * and parts the source lacks are deleted; in "add" mode matching parts stay as they are. Returns the target
 * parts whose links the source's links replace, and the source parts whose links are copied (all but "add"
 * matches).
 */
function mergeParts<R extends { id: string; key: string; created_at: string }>(
  p: Planner,
  table: Exclude<PartTable, "relations">,
  mode: MergeMode,
  sourceParts: R[],
  targetParts: R[],
  resourceId: string,
  map: Map<string, string> | null,
  fieldsOf: (row: R) => object,
): { replaced: string[]; linked: string[] } {
  const byKey = new Map(targetParts.map((part) => [part.key, part]));
  const seen = new Set<string>();
  const replaced: string[] = [];
  const linked: string[] = [];
  for (const part of sourceParts) {
    seen.add(part.key);
    const existing = mode === "new" ? undefined : byKey.get(part.key);
    copyObject(p, table, map, part, existing, mode === "replace", fieldsOf(part), {
      resource_id: resourceId,
    });
    if (existing && mode === "replace") replaced.push(existing.id);
    if (!existing || mode === "replace") linked.push(part.id);
  }
  if (mode === "replace") {
    for (const part of targetParts) {
      if (!seen.has(part.key)) p.plan.deletes[table].push(part.id);
    }
  }
  return { replaced, linked };
}

/** Actions, attributes, action groups and roles of the copied resources; notes whose links are copied. */
function copyResourceParts(p: Planner, resources: CopiedResource[]): void {
  const { src, tgt, plan, map } = p;
  const srcBy = {
    actions: groupBy(src.actions, (a) => a.resource_id),
    attributes: groupBy(src.attributes, (a) => a.resource_id),
    groups: groupBy(src.groups, (g) => g.resource_id),
    roles: groupBy(src.roles, (r) => r.resource_id),
  };
  const tgtBy = {
    actions: groupBy(tgt.actions, (a) => a.resource_id),
    attributes: groupBy(tgt.attributes, (a) => a.resource_id),
    groups: groupBy(tgt.groups, (g) => g.resource_id),
    roles: groupBy(tgt.roles, (r) => r.resource_id),
  };
  for (const { source: r, targetId, mode } of resources) {
    mergeParts(
      p,
      "resource_actions",
      mode,
      srcBy.actions.get(r.id) ?? [],
      tgtBy.actions.get(targetId) ?? [],
      targetId,
      map.action,
      (a) => ({ name: a.name, description: a.description, attributes: a.attributes }),
    );
    mergeParts(
      p,
      "resource_attributes",
      mode,
      srcBy.attributes.get(r.id) ?? [],
      tgtBy.attributes.get(targetId) ?? [],
      targetId,
      null,
      (a) => ({ type: a.type, description: a.description, built_in: a.built_in }),
    );
    const groups = mergeParts(
      p,
      "action_groups",
      mode,
      srcBy.groups.get(r.id) ?? [],
      tgtBy.groups.get(targetId) ?? [],
      targetId,
      map.group,
      (g) => ({ name: g.name, description: g.description, attributes: g.attributes }),
    );
    plan.clearLinks.action_group_actions.push(...groups.replaced);
    for (const id of groups.linked) p.linkedGroups.add(id);
    const roles = mergeParts(
      p,
      "roles",
      mode,
      srcBy.roles.get(r.id) ?? [],
      tgtBy.roles.get(targetId) ?? [],
      targetId,
      map.role,
      (role) => ({
        name: role.name,
        description: role.description,
        attributes: role.attributes,
        no_direct_roles_on_object: role.no_direct_roles_on_object,
      }),
    );
    for (const id of roles.linked) p.linkedRoles.add(id);
    for (const table of ["role_permissions", "role_extends", "role_derivations"] as const) {
      plan.clearLinks[table].push(...roles.replaced);
    }
  }
}

/** Relations of the copied resources, matched by key and subject. */
function copyRelations(
  p: Planner,
  resources: CopiedResource[],
  resolveResource: Resolvers["resource"],
): void {
  const srcRelations = groupBy(p.src.relations, (r) => r.object_resource_id);
  const tgtRelations = groupBy(p.tgt.relations, (r) => r.object_resource_id);
  for (const { source: r, targetId, mode } of resources) {
    const existingByKey = new Map((tgtRelations.get(targetId) ?? []).map((rel) => [rel.key, rel]));
    const kept = new Set<string>();
    for (const rel of srcRelations.get(r.id) ?? []) {
      const subject = resolveResource(rel.subject_resource_id);
      const existing = mode === "new" ? undefined : existingByKey.get(rel.key);
      if (
        existing &&
        (mode === "add" || (subject !== undefined && existing.subject_resource_id === subject))
      ) {
        kept.add(existing.key);
        p.map.relation.set(rel.id, existing.id);
        if (mode === "replace")
          update(p, "relations", existing, { name: rel.name, description: rel.description });
        continue;
      }
      // A subject that is neither copied nor in the target: the relation cannot exist there.
      if (subject === undefined) continue;
      // Same key, another subject: a new relation (tuples of the old one cannot fit it).
      const id = newId();
      p.map.relation.set(rel.id, id);
      p.plan.inserts.relations.push({
        ...p.scoped,
        id,
        object_resource_id: targetId,
        subject_resource_id: subject,
        key: rel.key,
        name: rel.name,
        description: rel.description,
        created_at: rel.created_at,
        updated_at: p.at,
      });
    }
    if (mode === "replace") {
      for (const rel of existingByKey.values()) if (!kept.has(rel.key)) p.plan.deletes.relations.push(rel.id);
    }
  }
}

/** Tenant roles (roles of no resource): a taken key is overwritten, its links replaced. */
function copyTenantRoles(p: Planner, selected: Row<"roles">[]): void {
  const tgtTenantRoleByKey = new Map(
    p.tgt.roles.filter((r) => r.resource_id === null).map((r) => [r.key, r]),
  );
  for (const role of selected) {
    const existing = tgtTenantRoleByKey.get(role.key);
    const fields = {
      name: role.name,
      description: role.description,
      attributes: role.attributes,
      no_direct_roles_on_object: role.no_direct_roles_on_object,
    };
    copyObject(p, "roles", p.map.role, role, existing, true, fields, { resource_id: null });
    if (existing) {
      for (const table of ["role_permissions", "role_extends", "role_derivations"] as const) {
        p.plan.clearLinks[table].push(existing.id);
      }
    }
    p.linkedRoles.add(role.id);
  }
}

/** Links of copied roles and groups: group members, permissions, parents and derivations. */
function copyLinks(p: Planner, resolve: Resolvers): void {
  const { src, map, linkedGroups, linkedRoles } = p;
  const inserts = p.plan.inserts;
  const env = p.scoped.environment_id;
  for (const m of src.groupActions) {
    if (!linkedGroups.has(m.action_group_id)) continue;
    const group = map.group.get(m.action_group_id);
    const action = resolve.action(m.action_id);
    if (group && action)
      inserts.action_group_actions.push({ environment_id: env, action_group_id: group, action_id: action });
  }
  for (const perm of src.permissions) {
    if (!linkedRoles.has(perm.role_id)) continue;
    const role = map.role.get(perm.role_id);
    const action = resolve.action(perm.action_id);
    if (role && action)
      inserts.role_permissions.push({ environment_id: env, role_id: role, action_id: action });
  }
  for (const e of src.extends) {
    if (!linkedRoles.has(e.role_id)) continue;
    const role = map.role.get(e.role_id);
    const parent = resolve.role(e.extends_role_id);
    if (role && parent)
      inserts.role_extends.push({ environment_id: env, role_id: role, extends_role_id: parent });
  }
  for (const d of src.derivations) {
    if (!linkedRoles.has(d.role_id)) continue;
    const role = map.role.get(d.role_id);
    const sourceRole = resolve.role(d.source_role_id);
    const relation = resolve.relation(d.relation_id);
    if (role && sourceRole && relation) {
      inserts.role_derivations.push({
        id: newId(),
        environment_id: env,
        role_id: role,
        source_role_id: sourceRole,
        relation_id: relation,
        no_direct_roles_on_object: d.no_direct_roles_on_object,
        created_at: d.created_at,
      });
    }
  }
}

/** Condition sets, then their parents once every set exists (a parent that would close a loop is dropped). */
function copyConditionSets(p: Planner, selected: Row<"conditionSets">[], resolve: Resolvers): void {
  const tgtSetByKey = new Map(p.tgt.conditionSets.map((s) => [s.key, s]));
  const parentOf = new Map(p.tgt.conditionSets.map((s) => [s.id, s.parent_id]));
  const copiedSets: { source: Selectable<Database["condition_sets"]>; id: string }[] = [];
  for (const s of selected) {
    const resource = s.resource_id === null ? null : resolve.resource(s.resource_id);
    // A resource set of a resource the target will not have would match nothing: leave it out.
    if (resource === undefined) continue;
    const existing = tgtSetByKey.get(s.key);
    const fields = {
      type: s.type,
      autogenerated: s.autogenerated,
      resource_id: resource,
      name: s.name,
      description: s.description,
      conditions: s.conditions,
    };
    const id = copyObject(p, "condition_sets", p.map.set, s, existing, true, fields, { parent_id: null });
    if (!existing) parentOf.set(id, null);
    copiedSets.push({ source: s, id });
  }
  const reaches = (from: string | null, to: string) => {
    for (let node = from, steps = 0; node !== null && steps <= parentOf.size; steps++) {
      if (node === to) return true;
      node = parentOf.get(node) ?? null;
    }
    return false;
  };
  for (const { source, id } of copiedSets) {
    let parent = source.parent_id === null ? null : (resolve.set(source.parent_id) ?? null);
    if (parent !== null && reaches(parent, id)) parent = null;
    if ((parentOf.get(id) ?? null) !== parent) {
      parentOf.set(id, parent);
      p.plan.parents.push({ id, parent_id: parent });
    }
  }
}

/** Set rules of a copied condition set, when all they name exists in the target and the target lacks them. */
function copySetRules(p: Planner, resolve: Resolvers): void {
  const existingRules = new Set(
    p.tgt.rules.map((r) => [r.user_set_id, r.action_id, r.resource_set_id].join(SEP)),
  );
  for (const rule of p.src.rules) {
    if (!p.map.set.has(rule.user_set_id) && !p.map.set.has(rule.resource_set_id)) continue;
    const userSet = resolve.set(rule.user_set_id);
    const resourceSet = resolve.set(rule.resource_set_id);
    const action = resolve.action(rule.action_id);
    if (!userSet || !resourceSet || !action) continue;
    const ident = [userSet, action, resourceSet].join(SEP);
    if (existingRules.has(ident)) continue;
    existingRules.add(ident);
    p.plan.inserts.condition_set_rules.push({
      ...p.scoped,
      id: newId(),
      key: rule.key,
      user_set_id: userSet,
      action_id: action,
      resource_set_id: resourceSet,
      created_at: rule.created_at,
      updated_at: p.at,
    });
  }
}
