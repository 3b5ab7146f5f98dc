import { BUILT_IN_RESOURCES, USER_RESOURCE_KEY } from "../../domain/built-in-resources.ts";
import { resourceColumns } from "../../domain/schema/resource-records.ts";
import { newId } from "../../lib/ids.ts";
import { fromJson, toJson } from "../../lib/json.ts";
import type { PolicyRows } from "../environment-copy/environment-copy.repo.ts";
import { emptyPolicy } from "./policy.format.ts";
import type { AttributeDoc, ConditionSetDoc, Json, PolicyDoc, ResourceDoc } from "./policy.format.ts";

/** Turns stored rows into the document and back; the environment copy's planner does the writing. */

const TENANT_RESOURCE_KEY = "__tenant";

const some = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

const flag = <K extends string>(key: K, value: number): { [P in K]?: boolean } =>
  (value === 1 ? { [key]: true } : {}) as { [P in K]?: boolean };

/** An environment's stored policy as a document (built-in resources become the user and tenant attributes). */
export function policyFromRows(rows: PolicyRows): PolicyDoc {
  const resourceKey = new Map(rows.resources.map((r) => [r.id, r.key]));
  const actionOf = new Map(rows.actions.map((a) => [a.id, a]));
  const roleOf = new Map(rows.roles.map((r) => [r.id, r]));
  const relationOf = new Map(rows.relations.map((r) => [r.id, r]));
  const setKey = new Map(rows.conditionSets.map((s) => [s.id, s.key]));
  const attributesOf = (resourceId: string): Record<string, AttributeDoc> =>
    Object.fromEntries(
      rows.attributes
        .filter((a) => a.resource_id === resourceId)
        .map((a) => [a.key, { type: a.type, ...some("description", a.description) }]),
    );
  const doc: PolicyDoc = emptyPolicy();
  const byResource = new Map<string, ResourceDoc>();
  for (const r of rows.resources) {
    if (r.built_in === 1) {
      if (r.key === USER_RESOURCE_KEY) doc.user_attributes = attributesOf(r.id);
      if (r.key === TENANT_RESOURCE_KEY) doc.tenant_attributes = attributesOf(r.id);
      continue;
    }
    const resource: ResourceDoc = {
      name: r.name,
      ...some("description", r.description),
      ...some("urn", r.urn),
      ...some("type_attributes", fromJson<Json>(r.type_attributes)),
      actions: {},
      attributes: attributesOf(r.id),
      action_groups: {},
      roles: {},
      relations: {},
    };
    doc.resources[r.key] = resource;
    byResource.set(r.id, resource);
  }
  for (const a of rows.actions) {
    const resource = byResource.get(a.resource_id);
    if (resource) {
      resource.actions[a.key] = {
        name: a.name,
        ...some("description", a.description),
        ...some("attributes", fromJson<Json>(a.attributes)),
      };
    }
  }
  const groupActions = new Map<string, string[]>();
  for (const m of rows.groupActions) {
    const action = actionOf.get(m.action_id);
    if (action)
      groupActions.set(m.action_group_id, [...(groupActions.get(m.action_group_id) ?? []), action.key]);
  }
  for (const g of rows.groups) {
    const resource = byResource.get(g.resource_id);
    if (resource) {
      resource.action_groups[g.key] = {
        name: g.name,
        ...some("description", g.description),
        ...some("attributes", fromJson<Json>(g.attributes)),
        actions: groupActions.get(g.id) ?? [],
      };
    }
  }
  for (const rel of rows.relations) {
    const resource = byResource.get(rel.object_resource_id);
    const subject = resourceKey.get(rel.subject_resource_id);
    if (resource && subject !== undefined) {
      resource.relations[rel.key] = { subject, name: rel.name, ...some("description", rel.description) };
    }
  }
  const permissions = new Map<string, string[]>();
  for (const p of rows.permissions) {
    const action = actionOf.get(p.action_id);
    const role = roleOf.get(p.role_id);
    if (!action || !role) continue;
    // A resource role's permissions are its own resource's actions; a tenant role's name the resource.
    const text =
      role.resource_id === null ? `${resourceKey.get(action.resource_id)}:${action.key}` : action.key;
    permissions.set(p.role_id, [...(permissions.get(p.role_id) ?? []), text]);
  }
  const parents = new Map<string, string[]>();
  for (const e of rows.extends) {
    const parent = roleOf.get(e.extends_role_id);
    if (parent) parents.set(e.role_id, [...(parents.get(e.role_id) ?? []), parent.key]);
  }
  for (const role of rows.roles) {
    const common = {
      name: role.name,
      ...some("description", role.description),
      ...some("attributes", fromJson<Json>(role.attributes)),
      ...flag("no_direct_roles_on_object", role.no_direct_roles_on_object),
      permissions: permissions.get(role.id) ?? [],
      extends: parents.get(role.id) ?? [],
    };
    if (role.resource_id === null) doc.roles[role.key] = common;
    else {
      const resource = byResource.get(role.resource_id);
      if (resource) resource.roles[role.key] = { ...common, derived_from: [] };
    }
  }
  for (const d of rows.derivations) {
    const role = roleOf.get(d.role_id);
    const source = roleOf.get(d.source_role_id);
    const relation = relationOf.get(d.relation_id);
    if (!role?.resource_id || !source?.resource_id || !relation) continue;
    const target = byResource.get(role.resource_id)?.roles[role.key];
    target?.derived_from.push({
      role: source.key,
      on_resource: resourceKey.get(source.resource_id) ?? "",
      linked_by_relation: relation.key,
      ...flag("no_direct_roles_on_object", d.no_direct_roles_on_object),
    });
  }
  for (const s of rows.conditionSets) {
    const set: ConditionSetDoc = {
      name: s.name,
      ...some("description", s.description),
      ...some("resource", s.resource_id === null ? null : resourceKey.get(s.resource_id)),
      ...some("parent", s.parent_id === null ? null : setKey.get(s.parent_id)),
      ...flag("autogenerated", s.autogenerated),
      conditions: fromJson<Json>(s.conditions) ?? {},
    };
    if (s.type === "resourceset") doc.resource_sets[s.key] = set;
    else doc.user_sets[s.key] = set;
  }
  for (const rule of rows.rules) {
    const action = actionOf.get(rule.action_id);
    doc.set_rules.push({
      user_set: setKey.get(rule.user_set_id) ?? "",
      permission: `${action ? resourceKey.get(action.resource_id) : ""}:${action?.key ?? ""}`,
      resource_set: setKey.get(rule.resource_set_id) ?? "",
    });
  }
  return doc;
}

/**
 * The document as the rows of an environment that holds it, for the environment copy's planner to copy onto the
 * target (`target`: its built-in resources keep their own fields; only their attributes come from the document).
 * Ids are fresh: the planner matches by key.
 */
export function rowsFromPolicy(
  doc: PolicyDoc,
  target: PolicyRows,
  env: { id: string; organization_id: string; project_id: string },
  at: string,
): PolicyRows {
  const scoped = { organization_id: env.organization_id, project_id: env.project_id, environment_id: env.id };
  const stamp = { created_at: at, updated_at: at };
  const rows: PolicyRows = {
    resources: [],
    actions: [],
    attributes: [],
    groups: [],
    groupActions: [],
    roles: [],
    permissions: [],
    extends: [],
    relations: [],
    derivations: [],
    conditionSets: [],
    rules: [],
  };
  const resourceId = new Map<string, string>();
  const actionId = new Map<string, string>();
  const roleId = new Map<string, string>();
  const relationId = new Map<string, string>();
  const setId = new Map<string, string>();
  const addAttributes = (resource: string, attributes: Record<string, AttributeDoc>) => {
    for (const [key, a] of Object.entries(attributes)) {
      rows.attributes.push({
        ...scoped,
        ...stamp,
        id: newId(),
        resource_id: resource,
        key,
        type: a.type,
        description: a.description ?? null,
        built_in: 0,
      });
    }
  };
  for (const builtIn of BUILT_IN_RESOURCES) {
    const existing = target.resources.find((r) => r.key === builtIn.key && r.built_in === 1);
    const id = newId();
    rows.resources.push({
      ...scoped,
      ...stamp,
      id,
      key: builtIn.key,
      name: existing?.name ?? builtIn.name,
      description: existing?.description ?? builtIn.description,
      urn: existing?.urn ?? null,
      type_attributes: existing?.type_attributes ?? null,
      built_in: 1,
    });
    addAttributes(id, builtIn.key === USER_RESOURCE_KEY ? doc.user_attributes : doc.tenant_attributes);
  }
  for (const [key, r] of Object.entries(doc.resources)) {
    const id = newId();
    resourceId.set(key, id);
    rows.resources.push({
      ...scoped,
      ...stamp,
      id,
      ...resourceColumns(key, r),
    });
    addAttributes(id, r.attributes);
    for (const [ak, a] of Object.entries(r.actions)) {
      const aid = newId();
      actionId.set(`${key}:${ak}`, aid);
      rows.actions.push({
        ...scoped,
        ...stamp,
        id: aid,
        resource_id: id,
        key: ak,
        name: a.name,
        description: a.description ?? null,
        attributes: toJson(a.attributes),
      });
    }
  }
  const roleRow = (key: string, resource: string | null, role: PolicyDoc["roles"][string]) => {
    const id = newId();
    rows.roles.push({
      ...scoped,
      ...stamp,
      id,
      resource_id: resource,
      key,
      name: role.name,
      description: role.description ?? null,
      attributes: toJson(role.attributes),
      no_direct_roles_on_object: role.no_direct_roles_on_object ? 1 : 0,
    });
    return id;
  };
  for (const [key, r] of Object.entries(doc.resources)) {
    const id = resourceId.get(key) as string;
    for (const [gk, g] of Object.entries(r.action_groups)) {
      const gid = newId();
      rows.groups.push({
        ...scoped,
        ...stamp,
        id: gid,
        resource_id: id,
        key: gk,
        name: g.name,
        description: g.description ?? null,
        attributes: toJson(g.attributes),
      });
      for (const a of new Set(g.actions)) {
        rows.groupActions.push({
          environment_id: env.id,
          action_group_id: gid,
          action_id: actionId.get(`${key}:${a}`) as string,
        });
      }
    }
    for (const [lk, rel] of Object.entries(r.relations)) {
      const lid = newId();
      relationId.set(`${key}:${lk}`, lid);
      rows.relations.push({
        ...scoped,
        ...stamp,
        id: lid,
        object_resource_id: id,
        subject_resource_id: resourceId.get(rel.subject) as string,
        key: lk,
        name: rel.name,
        description: rel.description ?? null,
      });
    }
    for (const [ok, role] of Object.entries(r.roles)) roleId.set(`${key}:${ok}`, roleRow(ok, id, role));
  }
  for (const [key, role] of Object.entries(doc.roles)) roleId.set(`:${key}`, roleRow(key, null, role));
  const link = (roleKey: string, permissions: Iterable<string>, parents: Iterable<string>, owner: string) => {
    const role = roleId.get(roleKey) as string;
    for (const p of new Set(permissions)) {
      const action = actionId.get(owner === "" ? p : `${owner}:${p}`) as string;
      rows.permissions.push({ environment_id: env.id, role_id: role, action_id: action });
    }
    for (const e of new Set(parents)) {
      rows.extends.push({
        environment_id: env.id,
        role_id: role,
        extends_role_id: roleId.get(`${owner}:${e}`) as string,
      });
    }
  };
  for (const [key, r] of Object.entries(doc.resources)) {
    for (const [ok, role] of Object.entries(r.roles)) {
      link(`${key}:${ok}`, role.permissions, role.extends, key);
      for (const d of role.derived_from) {
        rows.derivations.push({
          id: newId(),
          environment_id: env.id,
          role_id: roleId.get(`${key}:${ok}`) as string,
          source_role_id: roleId.get(`${d.on_resource}:${d.role}`) as string,
          relation_id: relationId.get(`${key}:${d.linked_by_relation}`) as string,
          no_direct_roles_on_object: d.no_direct_roles_on_object ? 1 : 0,
          created_at: at,
        });
      }
    }
  }
  for (const [key, role] of Object.entries(doc.roles)) link(`:${key}`, role.permissions, role.extends, "");
  const sets = [
    ...Object.entries(doc.user_sets).map(([k, s]) => [k, s, "userset"] as const),
    ...Object.entries(doc.resource_sets).map(([k, s]) => [k, s, "resourceset"] as const),
  ];
  for (const [key] of sets) setId.set(key, newId());
  for (const [key, s, type] of sets) {
    rows.conditionSets.push({
      ...scoped,
      ...stamp,
      id: setId.get(key) as string,
      key,
      type,
      autogenerated: s.autogenerated ? 1 : 0,
      resource_id: s.resource === undefined ? null : (resourceId.get(s.resource) as string),
      parent_id: s.parent === undefined ? null : (setId.get(s.parent) as string),
      name: s.name,
      description: s.description ?? null,
      conditions: toJson(s.conditions ?? {}),
    });
  }
  for (const rule of doc.set_rules) {
    const [resource, action] = rule.permission.split(":");
    rows.rules.push({
      ...scoped,
      ...stamp,
      id: newId(),
      key: `${rule.user_set}_${resource}_${action}_${rule.resource_set}`,
      user_set_id: setId.get(rule.user_set) as string,
      action_id: actionId.get(rule.permission) as string,
      resource_set_id: setId.get(rule.resource_set) as string,
    });
  }
  return rows;
}
