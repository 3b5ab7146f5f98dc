import type { Insertable, Selectable } from "kysely";
import type { Database } from "../../db/types.ts";
import { newId } from "../../lib/ids.ts";
import type { IdTable, PolicyRows, PolicyTable } from "./environment-copy.repo.ts";

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
  const { source: src, target: tgt, targetEnv, scope, strategy, at } = input;
  const scoped = {
    organization_id: targetEnv.organization_id,
    project_id: targetEnv.project_id,
    environment_id: targetEnv.id,
  };
  const env = targetEnv.id;
  const plan: CopyPlan = {
    conflicts: { resources: [], roles: [], condition_sets: [] },
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
  const update = (table: IdTable, current: { id: string }, next: object) => {
    const patch = diff(current, next);
    if (patch) plan.updates.push({ table, id: current.id, patch: { ...patch, updated_at: at } });
  };

  const srcIds = identities(src);
  const tgtIds = identities(tgt);
  const tgtResourceByKey = new Map(tgt.resources.map((r) => [r.key, r]));
  const tgtTenantRoleByKey = new Map(tgt.roles.filter((r) => r.resource_id === null).map((r) => [r.key, r]));
  const tgtSetByKey = new Map(tgt.conditionSets.map((s) => [s.key, s]));

  // ---- Selection and conflicts ----
  const selectedResources = src.resources.filter((r) => selects(scope.resources)(r.key));
  const selectedTenantRoles = src.roles.filter((r) => r.resource_id === null && selects(scope.roles)(r.key));
  const selectedSets = src.conditionSets.filter((s) =>
    selects(s.type === "resourceset" ? scope.resource_sets : scope.user_sets)(s.key),
  );
  for (const r of selectedResources) {
    const existing = tgtResourceByKey.get(r.key);
    if (existing && !(existing.built_in === 1 && r.built_in === 1)) plan.conflicts.resources.push(r.key);
  }
  for (const r of selectedTenantRoles) if (tgtTenantRoleByKey.has(r.key)) plan.conflicts.roles.push(r.key);
  for (const s of selectedSets) if (tgtSetByKey.has(s.key)) plan.conflicts.condition_sets.push(s.key);
  const hasConflicts =
    plan.conflicts.resources.length + plan.conflicts.roles.length + plan.conflicts.condition_sets.length > 0;
  if (hasConflicts && strategy === "fail") return plan;

  // ---- Source id -> target id for everything copied; references to the rest resolve by key ----
  const resourceMap = new Map<string, string>();
  const actionMap = new Map<string, string>();
  const roleMap = new Map<string, string>();
  const relationMap = new Map<string, string>();
  const setMap = new Map<string, string>();
  const selectedResourceIds = new Set(selectedResources.map((r) => r.id));
  const selectedRoleIds = new Set(selectedTenantRoles.map((r) => r.id));
  const selectedSetIds = new Set(selectedSets.map((s) => s.id));
  const tgtResourceIdByKey = new Map(tgt.resources.map((r) => [r.key, r.id]));
  const tgtActionIdByIdent = invert(tgtIds.action);
  const tgtRoleIdByIdent = invert(tgtIds.role);
  const tgtRelationIdByIdent = invert(tgtIds.relation);
  const tgtSetIdByKey = invert(tgtIds.set);

  const srcActionResource = new Map(src.actions.map((a) => [a.id, a.resource_id]));
  const srcRoleResource = new Map(src.roles.map((r) => [r.id, r.resource_id]));
  const srcRelationResource = new Map(src.relations.map((r) => [r.id, r.object_resource_id]));

  const resolveResource = (id: string) =>
    resourceMap.get(id) ??
    (selectedResourceIds.has(id) ? undefined : tgtResourceIdByKey.get(srcIds.resourceKey.get(id) ?? ""));
  const copiedWithResource = (resourceId: string | null | undefined) =>
    resourceId !== null && resourceId !== undefined && selectedResourceIds.has(resourceId);
  const resolveAction = (id: string) =>
    actionMap.get(id) ??
    (copiedWithResource(srcActionResource.get(id))
      ? undefined
      : tgtActionIdByIdent.get(srcIds.action.get(id) ?? ""));
  const resolveRole = (id: string) => {
    const owner = srcRoleResource.get(id);
    const copied = owner === null ? selectedRoleIds.has(id) : copiedWithResource(owner);
    return roleMap.get(id) ?? (copied ? undefined : tgtRoleIdByIdent.get(srcIds.role.get(id) ?? ""));
  };
  const resolveRelation = (id: string) =>
    relationMap.get(id) ??
    (copiedWithResource(srcRelationResource.get(id))
      ? undefined
      : tgtRelationIdByIdent.get(srcIds.relation.get(id) ?? ""));
  const resolveSet = (id: string) =>
    setMap.get(id) ?? (selectedSetIds.has(id) ? undefined : tgtSetIdByKey.get(srcIds.set.get(id) ?? ""));

  // ---- Resources ----
  /** How the parts of each copied resource are merged into the target's resource of the same key. */
  const mergeMode = new Map<string, "new" | "replace" | "add">();
  const targetResourceOf = new Map<string, string>();
  for (const r of selectedResources) {
    const existing = tgtResourceByKey.get(r.key);
    const fields = {
      name: r.name,
      description: r.description,
      urn: r.urn,
      type_attributes: r.type_attributes,
    };
    if (existing) {
      resourceMap.set(r.id, existing.id);
      mergeMode.set(r.id, strategy === "overwrite" ? "replace" : "add");
      if (strategy === "overwrite") update("resources", existing, fields);
    } else {
      const id = newId();
      resourceMap.set(r.id, id);
      mergeMode.set(r.id, "new");
      plan.inserts.resources.push({
        ...scoped,
        id,
        key: r.key,
        ...fields,
        built_in: r.built_in,
        created_at: r.created_at,
        updated_at: at,
      });
    }
    targetResourceOf.set(r.id, resourceMap.get(r.id) ?? "");
  }

  const srcByResource = {
    actions: groupBy(src.actions, (a) => a.resource_id),
    attributes: groupBy(src.attributes, (a) => a.resource_id),
    groups: groupBy(src.groups, (g) => g.resource_id),
    roles: groupBy(src.roles, (r) => r.resource_id),
    relations: groupBy(src.relations, (r) => r.object_resource_id),
  };
  const tgtByResource = {
    actions: groupBy(tgt.actions, (a) => a.resource_id),
    attributes: groupBy(tgt.attributes, (a) => a.resource_id),
    groups: groupBy(tgt.groups, (g) => g.resource_id),
    roles: groupBy(tgt.roles, (r) => r.resource_id),
    relations: groupBy(tgt.relations, (r) => r.object_resource_id),
  };

  /**
   * Matches a resource's parts by key. New parts are inserted; in "replace" mode matching parts are updated
   * and parts the source lacks are deleted; in "add" mode matching parts stay as they are. Returns the target
   * parts whose links the source's links replace.
   */
  function mergeParts<R extends { id: string; key: string; created_at: string }>(
    table: Exclude<PartTable, "relations">,
    mode: "new" | "replace" | "add",
    sourceParts: R[],
    targetParts: R[],
    resourceId: string,
    map: Map<string, string> | null,
    fieldsOf: (row: R) => object,
  ): { replaced: string[] } {
    const byKey = new Map(targetParts.map((p) => [p.key, p]));
    const seen = new Set<string>();
    const replaced: string[] = [];
    for (const part of sourceParts) {
      const key = part.key;
      seen.add(key);
      const existing = mode === "new" ? undefined : byKey.get(key);
      if (existing) {
        map?.set(part.id, existing.id);
        if (mode === "replace") {
          update(table, existing, fieldsOf(part));
          replaced.push(existing.id);
        }
      } else {
        const id = newId();
        map?.set(part.id, id);
        (plan.inserts[table] as object[]).push({
          ...scoped,
          id,
          resource_id: resourceId,
          key,
          ...fieldsOf(part),
          created_at: part.created_at,
          updated_at: at,
        });
      }
    }
    if (mode === "replace") {
      for (const part of targetParts) {
        if (!seen.has(part.key)) plan.deletes[table].push(part.id);
      }
    }
    return { replaced };
  }

  const groupMap = new Map<string, string>();
  /** Copied roles and groups whose links are written from the source's (all, except "add" matches). */
  const linkedRoles = new Set<string>();
  const linkedGroups = new Set<string>();
  for (const r of selectedResources) {
    const mode = mergeMode.get(r.id) ?? "new";
    const targetId = targetResourceOf.get(r.id) ?? "";
    mergeParts(
      "resource_actions",
      mode,
      srcByResource.actions.get(r.id) ?? [],
      tgtByResource.actions.get(targetId) ?? [],
      targetId,
      actionMap,
      (a) => ({ name: a.name, description: a.description, attributes: a.attributes }),
    );
    mergeParts(
      "resource_attributes",
      mode,
      srcByResource.attributes.get(r.id) ?? [],
      tgtByResource.attributes.get(targetId) ?? [],
      targetId,
      null,
      (a) => ({ type: a.type, description: a.description, built_in: a.built_in }),
    );
    const groups = srcByResource.groups.get(r.id) ?? [];
    const groupsMerged = mergeParts(
      "action_groups",
      mode,
      groups,
      tgtByResource.groups.get(targetId) ?? [],
      targetId,
      groupMap,
      (g) => ({ name: g.name, description: g.description, attributes: g.attributes }),
    );
    plan.clearLinks.action_group_actions.push(...groupsMerged.replaced);
    const tgtGroupIds = new Set((tgtByResource.groups.get(targetId) ?? []).map((g) => g.id));
    for (const g of groups) {
      const id = groupMap.get(g.id);
      if (id && (!tgtGroupIds.has(id) || groupsMerged.replaced.includes(id))) linkedGroups.add(g.id);
    }
    const roles = srcByResource.roles.get(r.id) ?? [];
    const rolesMerged = mergeParts(
      "roles",
      mode,
      roles,
      tgtByResource.roles.get(targetId) ?? [],
      targetId,
      roleMap,
      (role) => ({
        name: role.name,
        description: role.description,
        attributes: role.attributes,
        no_direct_roles_on_object: role.no_direct_roles_on_object,
      }),
    );
    const replacedRoles = new Set(rolesMerged.replaced);
    const tgtRoleIds = new Set((tgtByResource.roles.get(targetId) ?? []).map((role) => role.id));
    for (const role of roles) {
      const id = roleMap.get(role.id);
      if (id && (!tgtRoleIds.has(id) || replacedRoles.has(id))) linkedRoles.add(role.id);
    }
    for (const table of ["role_permissions", "role_extends", "role_derivations"] as const) {
      plan.clearLinks[table].push(...rolesMerged.replaced);
    }
  }

  // Relations need every copied resource first: their subject may be any of them (or the target's own).
  for (const r of selectedResources) {
    const mode = mergeMode.get(r.id) ?? "new";
    const targetId = targetResourceOf.get(r.id) ?? "";
    const existingByKey = new Map((tgtByResource.relations.get(targetId) ?? []).map((rel) => [rel.key, rel]));
    const kept = new Set<string>();
    for (const rel of srcByResource.relations.get(r.id) ?? []) {
      const subject = resolveResource(rel.subject_resource_id);
      const existing = mode === "new" ? undefined : existingByKey.get(rel.key);
      if (
        existing &&
        (mode === "add" || (subject !== undefined && existing.subject_resource_id === subject))
      ) {
        kept.add(existing.key);
        relationMap.set(rel.id, existing.id);
        if (mode === "replace")
          update("relations", existing, { name: rel.name, description: rel.description });
        continue;
      }
      // A subject that is neither copied nor in the target: the relation cannot exist there.
      if (subject === undefined) continue;
      // Same key, another subject: a new relation (tuples of the old one cannot fit it).
      const id = newId();
      relationMap.set(rel.id, id);
      plan.inserts.relations.push({
        ...scoped,
        id,
        object_resource_id: targetId,
        subject_resource_id: subject,
        key: rel.key,
        name: rel.name,
        description: rel.description,
        created_at: rel.created_at,
        updated_at: at,
      });
    }
    if (mode === "replace") {
      for (const rel of existingByKey.values()) if (!kept.has(rel.key)) plan.deletes.relations.push(rel.id);
    }
  }

  // ---- Tenant roles ----
  for (const role of selectedTenantRoles) {
    const existing = tgtTenantRoleByKey.get(role.key);
    const fields = {
      name: role.name,
      description: role.description,
      attributes: role.attributes,
      no_direct_roles_on_object: role.no_direct_roles_on_object,
    };
    if (existing) {
      roleMap.set(role.id, existing.id);
      update("roles", existing, fields);
      for (const table of ["role_permissions", "role_extends", "role_derivations"] as const) {
        plan.clearLinks[table].push(existing.id);
      }
    } else {
      const id = newId();
      roleMap.set(role.id, id);
      plan.inserts.roles.push({
        ...scoped,
        id,
        resource_id: null,
        key: role.key,
        ...fields,
        created_at: role.created_at,
        updated_at: at,
      });
    }
    linkedRoles.add(role.id);
  }

  // ---- Links of copied roles and groups ----
  for (const m of src.groupActions) {
    if (!linkedGroups.has(m.action_group_id)) continue;
    const group = groupMap.get(m.action_group_id);
    const action = resolveAction(m.action_id);
    if (group && action)
      plan.inserts.action_group_actions.push({
        environment_id: env,
        action_group_id: group,
        action_id: action,
      });
  }
  for (const p of src.permissions) {
    if (!linkedRoles.has(p.role_id)) continue;
    const role = roleMap.get(p.role_id);
    const action = resolveAction(p.action_id);
    if (role && action)
      plan.inserts.role_permissions.push({ environment_id: env, role_id: role, action_id: action });
  }
  for (const e of src.extends) {
    if (!linkedRoles.has(e.role_id)) continue;
    const role = roleMap.get(e.role_id);
    const parent = resolveRole(e.extends_role_id);
    if (role && parent)
      plan.inserts.role_extends.push({ environment_id: env, role_id: role, extends_role_id: parent });
  }
  for (const d of src.derivations) {
    if (!linkedRoles.has(d.role_id)) continue;
    const role = roleMap.get(d.role_id);
    const sourceRole = resolveRole(d.source_role_id);
    const relation = resolveRelation(d.relation_id);
    if (role && sourceRole && relation) {
      plan.inserts.role_derivations.push({
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

  // ---- Condition sets ----
  const parentOf = new Map(tgt.conditionSets.map((s) => [s.id, s.parent_id]));
  const copiedSets: { source: Selectable<Database["condition_sets"]>; id: string }[] = [];
  for (const s of selectedSets) {
    const resource = s.resource_id === null ? null : resolveResource(s.resource_id);
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
    if (existing) {
      setMap.set(s.id, existing.id);
      update("condition_sets", existing, fields);
      copiedSets.push({ source: s, id: existing.id });
    } else {
      const id = newId();
      setMap.set(s.id, id);
      plan.inserts.condition_sets.push({
        ...scoped,
        id,
        key: s.key,
        ...fields,
        parent_id: null,
        created_at: s.created_at,
        updated_at: at,
      });
      parentOf.set(id, null);
      copiedSets.push({ source: s, id });
    }
  }
  const reaches = (from: string | null, to: string) => {
    for (let node = from, steps = 0; node !== null && steps <= parentOf.size; steps++) {
      if (node === to) return true;
      node = parentOf.get(node) ?? null;
    }
    return false;
  };
  for (const { source, id } of copiedSets) {
    let parent = source.parent_id === null ? null : (resolveSet(source.parent_id) ?? null);
    if (parent !== null && reaches(parent, id)) parent = null;
    if ((parentOf.get(id) ?? null) !== parent) {
      parentOf.set(id, parent);
      plan.parents.push({ id, parent_id: parent });
    }
  }

  // ---- Set rules ----
  const existingRules = new Set(
    tgt.rules.map((r) => [r.user_set_id, r.action_id, r.resource_set_id].join(SEP)),
  );
  for (const rule of src.rules) {
    if (!setMap.has(rule.user_set_id) && !setMap.has(rule.resource_set_id)) continue;
    const userSet = resolveSet(rule.user_set_id);
    const resourceSet = resolveSet(rule.resource_set_id);
    const action = resolveAction(rule.action_id);
    if (!userSet || !resourceSet || !action) continue;
    const ident = [userSet, action, resourceSet].join(SEP);
    if (existingRules.has(ident)) continue;
    existingRules.add(ident);
    plan.inserts.condition_set_rules.push({
      ...scoped,
      id: newId(),
      key: rule.key,
      user_set_id: userSet,
      action_id: action,
      resource_set_id: resourceSet,
      created_at: rule.created_at,
      updated_at: at,
    });
  }
  return plan;
}
