import type { Db } from "../../db/db.ts";
import { invalid, notFound } from "../../lib/errors.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import type { SchemaChanges } from "./schema.changes.ts";
import {
  findRelation,
  findRole,
  listRoleRows,
  type ResourceRow,
  type RoleGraph,
  type RoleRow,
} from "./schema.repo.ts";
import type {
  DerivedRoleBlockEdit,
  DerivedRoleRuleCreate,
  DerivedRoleRuleRead,
  ResourceRoleRead,
  RoleBlockEditable,
  RoleCreateBulk,
} from "./schema.schemas.ts";
import {
  assertKeys,
  assertNoExtendsCycle,
  createRoleRecord,
  requireResource,
  resolveResourceActions,
  resolveRoleRefs,
  writableResource,
} from "./schema-rules.ts";
import {
  deleteRoles,
  replaceDerivations,
  replaceRoleExtends,
  replaceRolePermissions,
  updateRole,
  type DerivationInput,
} from "./roles.repo.ts";

/**
 * Resource role records inside the caller's transaction, shared by resource-roles, resources (a resource's
 * roles are written with it) and roles.
 */

/** The fields every role read starts with (resource roles and tenant roles), permissions as the caller names them. */
export const roleReadHead = (graph: RoleGraph, permissions: string[]) => {
  const { row } = graph;
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    ...(row.description !== null && { description: row.description }),
    permissions,
    ...(row.attributes !== null && { attributes: fromJsonObject(row.attributes) }),
    extends: graph.extends.map((e) => e.key),
  };
};

export const resourceRoleRead = (graph: RoleGraph): ResourceRoleRead => {
  const { row } = graph;
  return {
    ...roleReadHead(
      graph,
      graph.permissions.map((p) => p.actionKey),
    ),
    // The derivation block has no row of its own; it is the role's, so it carries the role's id.
    granted_to: {
      id: row.id,
      when: { no_direct_roles_on_object: row.no_direct_roles_on_object === 1 },
      users_with_role: graph.derivations.map((d) => ({
        role_id: d.sourceRoleId,
        resource_id: d.sourceResourceId,
        relation_id: d.relationId,
        role: d.sourceRoleKey,
        on_resource: d.sourceResourceKey,
        linked_by_relation: d.relationKey,
        when: { no_direct_roles_on_object: d.noDirectRolesOnObject },
      })),
    },
    organization_id: row.organization_id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    resource_id: row.resource_id as string,
    resource: graph.resourceKey as string,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
};

type ResolvedDerivation = DerivationInput & { read: DerivedRoleRuleRead };

/**
 * "Users with `role` on an `on_resource` instance linked to this one by `linked_by_relation` get this role."
 * The relation belongs to the derived role's resource (the object) and its subject must be `on_resource`.
 */
export async function resolveDerivation(
  db: Db,
  envId: string,
  object: ResourceRow,
  rule: DerivedRoleRuleCreate,
  loc: (string | number)[],
): Promise<ResolvedDerivation> {
  const subject = await requireResource(db, envId, rule.on_resource);
  const sourceRole = await findRole(db, envId, subject.id, rule.role);
  if (!sourceRole) throw notFound("role", `${subject.key}:${rule.role}`);
  const relation = await findRelation(db, envId, object.id, rule.linked_by_relation);
  if (!relation) throw notFound("relation", `${object.key}:${rule.linked_by_relation}`);
  if (relation.subject_resource_id !== subject.id) {
    throw invalid(
      `relation '${relation.key}' of '${object.key}' does not link '${subject.key}': its subject is another resource`,
      [...loc, "linked_by_relation"],
    );
  }
  const noDirect = rule.when?.no_direct_roles_on_object ?? false;
  return {
    sourceRoleId: sourceRole.id,
    relationId: relation.id,
    noDirectRolesOnObject: noDirect,
    read: {
      role_id: sourceRole.id,
      resource_id: subject.id,
      relation_id: relation.id,
      role: sourceRole.key,
      on_resource: subject.key,
      linked_by_relation: relation.key,
      when: { no_direct_roles_on_object: noDirect },
    },
  };
}

interface RoleLinks {
  permissions?: string[] | undefined;
  extends?: string[] | undefined;
  granted_to?: DerivedRoleBlockEdit | undefined;
}

/** Writes the given link parts of a resource role (a part left out stays as it is). */
export async function writeResourceRoleLinks(
  trx: Db,
  envId: string,
  resource: ResourceRow,
  role: RoleRow,
  links: RoleLinks,
  loc: (string | number)[],
): Promise<void> {
  if (links.permissions !== undefined) {
    const actionIds = await resolveResourceActions(trx, envId, resource, links.permissions, [
      ...loc,
      "permissions",
    ]);
    await replaceRolePermissions(trx, envId, role.id, actionIds);
  }
  if (links.extends !== undefined) {
    await replaceRoleExtends(trx, envId, role.id, await resolveRoleRefs(trx, envId, resource, links.extends));
    await assertNoExtendsCycle(trx, envId, resource.id);
  }
  if (links.granted_to !== undefined) {
    const rules: ResolvedDerivation[] = [];
    for (const [i, rule] of (links.granted_to.users_with_role ?? []).entries()) {
      const resolved = await resolveDerivation(trx, envId, resource, rule, [
        ...loc,
        "granted_to",
        "users_with_role",
        i,
      ]);
      if (
        !rules.some((r) => r.sourceRoleId === resolved.sourceRoleId && r.relationId === resolved.relationId)
      ) {
        rules.push(resolved);
      }
    }
    await replaceDerivations(trx, envId, role.id, rules);
    await updateRole(trx, role.id, {
      no_direct_roles_on_object: links.granted_to.when?.no_direct_roles_on_object ? 1 : 0,
    });
  }
}

/**
 * Makes the resource's roles exactly `roles` (a resource body's block): kept keys keep their ids and so their
 * assignments; each role's permissions, extends and derivations become what the block says.
 */
export async function replaceResourceRoles(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  resource: ResourceRow,
  roles: Record<string, RoleBlockEditable>,
): Promise<void> {
  assertKeys(roles, "role", ["body", "roles"]);
  const envId = scope.environment.id;
  const existing = new Map((await listRoleRows(trx, envId, resource.id)).map((r) => [r.key, r]));
  const removed = [...existing.values()].filter((r) => !Object.hasOwn(roles, r.key)).map((r) => r.id);
  await changes.resourceRolesRemoved(removed);
  await deleteRoles(trx, removed);
  const rows = new Map<string, RoleRow>();
  const at = now();
  for (const [key, block] of Object.entries(roles)) {
    const current = existing.get(key);
    rows.set(
      key,
      current
        ? await updateRole(trx, current.id, {
            name: block.name,
            description: block.description ?? null,
            attributes: toJson(block.attributes),
            updated_at: at,
          })
        : await createRoleRecord(trx, scope, resource, key, block, at),
    );
  }
  // Links after every row exists, so roles of one body may extend each other.
  for (const [key, block] of Object.entries(roles)) {
    await writeResourceRoleLinks(
      trx,
      envId,
      resource,
      rows.get(key) as RoleRow,
      {
        permissions: block.permissions ?? [],
        extends: block.extends ?? [],
        granted_to: block.granted_to ?? {},
      },
      ["body", "roles", key],
    );
  }
  changes.resource(resource.id);
}

/** The resource-role operations of `PUT /bulk/roles`: create or replace each role of its resource. */
export async function bulkReplaceResourceRoles(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  operations: { op: RoleCreateBulk; index: number }[],
): Promise<{ created: string[]; updated: string[] }> {
  const envId = scope.environment.id;
  const created: string[] = [];
  const updated: string[] = [];
  const written: { resource: ResourceRow; role: RoleRow; op: RoleCreateBulk; index: number }[] = [];
  for (const { op, index } of operations) {
    const resource = await writableResource(trx, envId, op.resource as string);
    const existing = await findRole(trx, envId, resource.id, op.key);
    const role = existing
      ? await updateRole(trx, existing.id, {
          name: op.name,
          description: op.description ?? null,
          attributes: toJson(op.attributes),
          updated_at: now(),
        })
      : await createRoleRecord(trx, scope, resource, op.key, op);
    (existing ? updated : created).push(`${resource.key}:${op.key}`);
    written.push({ resource, role, op, index });
  }
  for (const { resource, role, op, index } of written) {
    await writeResourceRoleLinks(
      trx,
      envId,
      resource,
      role,
      { permissions: op.permissions ?? [], extends: op.extends ?? [], granted_to: op.granted_to ?? {} },
      ["body", "operations", index],
    );
    changes.resource(resource.id);
  }
  return { created, updated };
}
