import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { invalid, notFound } from "../../lib/errors.ts";
import { isUuid } from "../../lib/ids.ts";
import { toJson } from "../../lib/json.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { schemaWrite } from "../../domain/schema/schema.changes.ts";
import {
  findRole,
  listExtendsEdges,
  loadRoleGraphs,
  type RoleGraph,
  type RoleRow,
} from "../../domain/schema/schema.repo.ts";
import type { DerivedRoleBlockEdit, EnvPath } from "../../domain/schema/schema.schemas.ts";
import {
  assertNoExtendsCycle,
  createRoleRecord,
  resolveResourceActions,
  resolveRoleRefs,
  unique,
  walkRoles,
  writableResource,
} from "../../domain/schema/schema-rules.ts";
import { bulkReplaceResourceRoles, roleReadHead } from "../../domain/schema/resource-role-records.ts";
import {
  actionsByIds,
  actionsOfResources,
  existingResourceKeys,
  listTenantRolesPage,
  removeRoleExtends,
  removeRolePermissions,
} from "./roles.repo.ts";
import {
  addRoleExtends,
  addRolePermissions,
  deleteRoles,
  replaceRoleExtends,
  replaceRolePermissions,
  updateRole,
} from "../../domain/schema/roles.repo.ts";
import type {
  RoleCreate,
  RoleCreateBulk,
  RoleCreateBulkOperationResult,
  RoleListQuery,
  RoleParentPath,
  RolePath,
  RolePermissionChange,
  RolePermissionsBulkResult,
  RoleRead,
  RoleUpdate,
} from "./roles.schemas.ts";
import { namedPatch } from "../../lib/patch.ts";

export const roleRead = (graph: RoleGraph): RoleRead => {
  const { row } = graph;
  return {
    ...roleReadHead(
      graph,
      graph.permissions.map((p) => `${p.resourceKey}:${p.actionKey}`),
    ),
    organization_id: row.organization_id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
};

/** "resource:action" strings (or action ids) into action ids; an unknown resource or action is a 404. */
export async function resolveTenantPermissions(
  db: Db,
  envId: string,
  refs: readonly string[],
  loc: (string | number)[],
): Promise<string[]> {
  const parsed = unique(refs).map((ref, i) => {
    if (isUuid(ref)) return { ref, id: ref.toLowerCase() };
    const colon = ref.indexOf(":");
    if (colon <= 0 || colon === ref.length - 1) {
      throw invalid(`permission '${ref}' must have the form '<resource key>:<action key>'`, [...loc, i]);
    }
    return { ref, resource: ref.slice(0, colon), action: ref.slice(colon + 1) };
  });
  const resourceKeys = unique(parsed.flatMap((p) => p.resource ?? []));
  const [byId, byKey, resources] = await Promise.all([
    actionsByIds(
      db,
      envId,
      parsed.flatMap((p) => p.id ?? []),
    ),
    actionsOfResources(db, envId, resourceKeys),
    existingResourceKeys(db, envId, resourceKeys),
  ]);
  const ids = new Set(byId.map((a) => a.id));
  const named = new Map(byKey.map((a) => [`${a.resource_key}:${a.key}`, a.id]));
  return unique(
    parsed.map((p) => {
      if (p.id !== undefined) {
        if (!ids.has(p.id)) throw notFound("action", p.ref);
        return p.id;
      }
      const id = named.get(`${p.resource}:${p.action}`);
      if (id === undefined) {
        throw resources.has(p.resource ?? "")
          ? notFound("action", p.ref)
          : notFound("resource", p.resource ?? "");
      }
      return id;
    }),
  );
}

/** Derivations belong to resource roles: a tenant role has no object to derive onto. */
function assertNoDerivations(grantedTo: DerivedRoleBlockEdit | undefined, loc: (string | number)[]): void {
  if ((grantedTo?.users_with_role ?? []).length > 0) {
    throw invalid("granted_to derivations are defined on resource roles, not on tenant roles", [
      ...loc,
      "granted_to",
      "users_with_role",
    ]);
  }
}

interface TenantRoleBody {
  permissions?: string[] | undefined;
  extends?: string[] | undefined;
  granted_to?: DerivedRoleBlockEdit | undefined;
}

/** Writes the given link parts of a tenant role (a part left out stays as it is). */
async function writeTenantRoleLinks(trx: Db, envId: string, role: RoleRow, body: TenantRoleBody) {
  assertNoDerivations(body.granted_to, ["body"]);
  if (body.permissions !== undefined) {
    const actionIds = await resolveTenantPermissions(trx, envId, body.permissions, ["body", "permissions"]);
    await replaceRolePermissions(trx, envId, role.id, actionIds);
  }
  if (body.extends !== undefined) {
    await replaceRoleExtends(trx, envId, role.id, await resolveRoleRefs(trx, envId, null, body.extends));
  }
}

export function createRolesService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function requireRole(db: Db, envId: string, ref: string): Promise<RoleRow> {
    const row = await findRole(db, envId, null, ref);
    if (!row) throw notFound("role", ref);
    return row;
  }

  async function read(db: Db, envId: string, id: string): Promise<RoleRead> {
    const [graph] = await loadRoleGraphs(db, envId, [id]);
    return roleRead(graph as RoleGraph);
  }

  /** One change to a tenant role in a schema write; the answer is the role as it is after the change. */
  function changeRole(
    env: EnvScope,
    ref: string,
    change: (trx: Db, envId: string, role: RoleRow) => Promise<void>,
  ): Promise<RoleRead> {
    const envId = env.environment.id;
    return schemaWrite(db, envId, async (trx, changes) => {
      const role = await requireRole(trx, envId, ref);
      await change(trx, envId, role);
      changes.role(role.id);
      return read(trx, envId, role.id);
    });
  }

  async function related(
    env: EnvScope,
    path: RolePath,
    direction: "ancestors" | "descendants",
  ): Promise<{ roles: RoleRead[] }> {
    const { environment } = env;
    const role = await requireRole(db, environment.id, path.role_id);
    const ids = walkRoles(await listExtendsEdges(db, environment.id, null), role.id, direction);
    return { roles: (await loadRoleGraphs(db, environment.id, ids)).map(roleRead) };
  }

  return {
    async list(
      { environment }: EnvScope,
      path: EnvPath,
      query: RoleListQuery,
      page: PageRequest,
    ): Promise<RoleRead[] | Page<RoleRead>> {
      const { ids, total } = await listTenantRolesPage(
        db,
        environment.id,
        query.search,
        offsetOf(page),
        page.perPage,
      );
      const roles = (await loadRoleGraphs(db, environment.id, ids)).map(roleRead);
      return query.include_total_count ? envelope(roles, total, page) : roles;
    },

    async get({ environment }: EnvScope, path: RolePath): Promise<RoleRead> {
      return read(db, environment.id, (await requireRole(db, environment.id, path.role_id)).id);
    },

    async create(env: EnvScope, path: EnvPath, input: RoleCreate): Promise<RoleRead> {
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        assertNoDerivations(input.granted_to, ["body"]);
        const role = await createRoleRecord(trx, env, null, input.key, input);
        await writeTenantRoleLinks(trx, envId, role, input);
        await assertNoExtendsCycle(trx, envId, null);
        changes.role(role.id);
        return read(trx, envId, role.id);
      });
    },

    update: (env: EnvScope, path: RolePath, input: RoleUpdate) =>
      changeRole(env, path.role_id, async (trx, envId, role) => {
        await writeTenantRoleLinks(trx, envId, role, input);
        await assertNoExtendsCycle(trx, envId, null);
        await updateRole(trx, role.id, namedPatch(input));
      }),

    /** Removes the role with its assignments; roles extending it stop inheriting from it. */
    async remove(env: EnvScope, path: RolePath): Promise<void> {
      const envId = env.environment.id;
      await schemaWrite(db, envId, async (trx, changes) => {
        const role = await requireRole(trx, envId, path.role_id);
        await changes.tenantRoleRemoved(role);
        await deleteRoles(trx, [role.id]);
      });
    },

    /** Grants "resource:action" permissions; ones already granted are skipped. */
    assignPermissions: (env: EnvScope, path: RolePath, permissions: string[]) =>
      changeRole(env, path.role_id, async (trx, envId, role) => {
        const actionIds = await resolveTenantPermissions(trx, envId, permissions, ["body", "permissions"]);
        await addRolePermissions(trx, envId, role.id, actionIds);
      }),

    /** Revokes permissions; ones not granted are skipped, unknown resources or actions are a 404. */
    removePermissions: (env: EnvScope, path: RolePath, permissions: string[]) =>
      changeRole(env, path.role_id, async (trx, envId, role) => {
        const actionIds = await resolveTenantPermissions(trx, envId, permissions, ["body", "permissions"]);
        await removeRolePermissions(trx, envId, role.id, actionIds);
      }),

    /** Makes the role extend (inherit the permissions of) the parent role. */
    addParent: (env: EnvScope, path: RoleParentPath) =>
      changeRole(env, path.role_id, async (trx, envId, role) => {
        const parent = await requireRole(trx, envId, path.parent_role_id);
        await addRoleExtends(trx, envId, role.id, [parent.id]);
        await assertNoExtendsCycle(trx, envId, null);
      }),

    removeParent: (env: EnvScope, path: RoleParentPath) =>
      changeRole(env, path.role_id, async (trx, envId, role) => {
        const parent = await requireRole(trx, envId, path.parent_role_id);
        await removeRoleExtends(trx, envId, role.id, [parent.id]);
      }),

    ancestors: (env: EnvScope, path: RolePath) => related(env, path, "ancestors"),
    descendants: (env: EnvScope, path: RolePath) => related(env, path, "descendants"),

    /**
     * Creates or replaces tenant roles, and resource roles where `resource` is given, in one transaction. Every
     * role row is written before any extends, so roles in one request may extend each other.
     */
    async bulkReplace(
      env: EnvScope,
      path: EnvPath,
      operations: RoleCreateBulk[],
    ): Promise<RoleCreateBulkOperationResult> {
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const created: string[] = [];
        const updated: string[] = [];
        const tenantRoles: { role: RoleRow; op: RoleCreateBulk; index: number }[] = [];
        const resourceOps: { op: RoleCreateBulk; index: number }[] = [];
        for (const [index, op] of operations.entries()) {
          if (op.resource !== undefined) {
            resourceOps.push({ op, index });
            continue;
          }
          assertNoDerivations(op.granted_to, ["body", "operations", index]);
          const existing = await findRole(trx, envId, null, op.key);
          const fields = {
            name: op.name,
            description: op.description ?? null,
            attributes: toJson(op.attributes),
          };
          const role = existing
            ? await updateRole(trx, existing.id, { ...fields, updated_at: now() })
            : await createRoleRecord(trx, env, null, op.key, op);
          (existing ? updated : created).push(op.key);
          tenantRoles.push({ role, op, index });
        }
        for (const { role, op } of tenantRoles) {
          await writeTenantRoleLinks(trx, envId, role, {
            permissions: op.permissions ?? [],
            extends: op.extends ?? [],
          });
          changes.role(role.id);
        }
        await assertNoExtendsCycle(trx, envId, null);
        const resourceResult = await bulkReplaceResourceRoles(trx, env, changes, resourceOps);
        return {
          created: [...created, ...resourceResult.created],
          updated: [...updated, ...resourceResult.updated],
        };
      });
    },

    /**
     * Grants and revokes permissions of many tenant and resource roles in one transaction (a Gatehouse extension
     * for the dashboard's policy matrix). Every role and action is resolved before anything is written, so a
     * refused batch changes nothing; the changed roles reach the PDPs in one change record.
     */
    async bulkPermissions(
      env: EnvScope,
      _path: EnvPath,
      operations: RolePermissionChange[],
    ): Promise<RolePermissionsBulkResult> {
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const resolved = [];
        for (const [index, op] of operations.entries()) {
          const loc = ["body", "operations", index];
          const resource = op.resource === undefined ? null : await writableResource(trx, envId, op.resource);
          const role = await findRole(trx, envId, resource?.id ?? null, op.role);
          if (!role) throw notFound("role", resource ? `${resource.key}:${op.role}` : op.role);
          const resolve = (refs: string[] | undefined, field: string) =>
            resource
              ? resolveResourceActions(trx, envId, resource, refs ?? [], [...loc, field])
              : resolveTenantPermissions(trx, envId, refs ?? [], [...loc, field]);
          const grant = await resolve(op.grant, "grant");
          const revoke = await resolve(op.revoke, "revoke");
          if (grant.some((id) => revoke.includes(id))) {
            throw invalid("a permission cannot be granted and revoked in one operation", loc);
          }
          resolved.push({ resource, role, grant, revoke });
        }
        const updated: string[] = [];
        for (const { resource, role, grant, revoke } of resolved) {
          await addRolePermissions(trx, envId, role.id, grant);
          await removeRolePermissions(trx, envId, role.id, revoke);
          if (resource) changes.resource(resource.id);
          else changes.role(role.id);
          updated.push(resource ? `${resource.key}:${role.key}` : role.key);
        }
        return { updated: unique(updated) };
      });
    },
  };
}

export type RolesService = ReturnType<typeof createRolesService>;
