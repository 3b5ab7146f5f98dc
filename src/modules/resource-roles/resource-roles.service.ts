import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { duplicate, notFound } from "../../lib/errors.ts";
import type { PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { resourceWrite } from "../../domain/schema/schema.changes.ts";
import {
  findRole,
  listExtendsEdges,
  loadRoleGraphs,
  type ResourceRow,
  type RoleGraph,
  type RoleRow,
} from "../../domain/schema/schema.repo.ts";
import type {
  DerivationSettings,
  DerivedRoleRuleCreate,
  ResourcePath,
} from "../../domain/schema/schema.schemas.ts";
import {
  createRoleRecord,
  requireResource,
  resolveResourceActions,
  walkRoles,
} from "../../domain/schema/schema-rules.ts";
import { deleteDerivation, findDerivation, removeRolePermissions } from "../roles/roles.repo.ts";
import {
  addRolePermissions,
  deleteRoles,
  insertDerivations,
  updateRole,
} from "../../domain/schema/roles.repo.ts";
import { pageOfResource } from "../../db/pages.ts";
import type {
  ResourceRoleCreate,
  ResourceRolePath,
  ResourceRoleRead,
  ResourceRoleUpdate,
} from "./resource-roles.schemas.ts";
import {
  resourceRoleRead,
  writeResourceRoleLinks,
  resolveDerivation,
} from "../../domain/schema/resource-role-records.ts";
import { namedPatch } from "../../lib/patch.ts";
export function createResourceRolesService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function requireRole(db: Db, envId: string, resource: ResourceRow, ref: string): Promise<RoleRow> {
    const row = await findRole(db, envId, resource.id, ref);
    if (!row) throw notFound("role", `${resource.key}:${ref}`);
    return row;
  }

  async function read(db: Db, envId: string, id: string): Promise<ResourceRoleRead> {
    const [graph] = await loadRoleGraphs(db, envId, [id]);
    return resourceRoleRead(graph as RoleGraph);
  }

  /** One write to one role of a resource: the transaction, the lookups and the change record around `fn`. */
  async function writeRole<T>(
    env: EnvScope,
    path: ResourceRolePath,
    fn: (trx: Db, envId: string, resource: ResourceRow, role: RoleRow) => Promise<T>,
  ): Promise<T> {
    const envId = env.environment.id;
    return resourceWrite(db, envId, path.resource_id, async (trx, resource) =>
      fn(trx, envId, resource, await requireRole(trx, envId, resource, path.role_id)),
    );
  }

  async function related(
    { environment }: EnvScope,
    path: ResourceRolePath,
    direction: "ancestors" | "descendants",
  ) {
    const resource = await requireResource(db, environment.id, path.resource_id);
    const role = await requireRole(db, environment.id, resource, path.role_id);
    const ids = walkRoles(await listExtendsEdges(db, environment.id, resource.id), role.id, direction);
    return { roles: (await loadRoleGraphs(db, environment.id, ids)).map(resourceRoleRead) };
  }

  return {
    async list(
      { environment }: EnvScope,
      path: ResourcePath,
      page: PageRequest,
    ): Promise<ResourceRoleRead[]> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      const rows = await pageOfResource(db, "roles", environment.id, resource.id, page);
      const ids = rows.map((r) => r.id);
      return (await loadRoleGraphs(db, environment.id, ids)).map(resourceRoleRead);
    },

    async get({ environment }: EnvScope, path: ResourceRolePath): Promise<ResourceRoleRead> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      return read(db, environment.id, (await requireRole(db, environment.id, resource, path.role_id)).id);
    },

    async create(env: EnvScope, path: ResourcePath, input: ResourceRoleCreate): Promise<ResourceRoleRead> {
      const envId = env.environment.id;
      return resourceWrite(db, envId, path.resource_id, async (trx, resource) => {
        const role = await createRoleRecord(trx, env, resource, input.key, input);
        await writeResourceRoleLinks(trx, envId, resource, role, input, ["body"]);
        return read(trx, envId, role.id);
      });
    },

    update: (env: EnvScope, path: ResourceRolePath, input: ResourceRoleUpdate) =>
      writeRole(env, path, async (trx, envId, resource, role) => {
        await writeResourceRoleLinks(trx, envId, resource, role, input, ["body"]);
        await updateRole(trx, role.id, namedPatch(input));
        return read(trx, envId, role.id);
      }),

    /** Removes the role with its assignments and the derivations from or to it. */
    async remove(env: EnvScope, path: ResourceRolePath): Promise<void> {
      const envId = env.environment.id;
      await resourceWrite(db, envId, path.resource_id, async (trx, resource, changes) => {
        const role = await requireRole(trx, envId, resource, path.role_id);
        await changes.resourceRolesRemoved([role.id]);
        await deleteRoles(trx, [role.id]);
      });
    },

    /** Grants actions of the role's resource; ones already granted are skipped. */
    assignPermissions: (env: EnvScope, path: ResourceRolePath, permissions: string[]) =>
      writeRole(env, path, async (trx, envId, resource, role) => {
        const ids = await resolveResourceActions(trx, envId, resource, permissions, ["body", "permissions"]);
        await addRolePermissions(trx, envId, role.id, ids);
        return read(trx, envId, role.id);
      }),

    /** Revokes actions; ones not granted are skipped, unknown actions are a 404. */
    removePermissions: (env: EnvScope, path: ResourceRolePath, permissions: string[]) =>
      writeRole(env, path, async (trx, envId, resource, role) => {
        const ids = await resolveResourceActions(trx, envId, resource, permissions, ["body", "permissions"]);
        await removeRolePermissions(trx, envId, role.id, ids);
        return read(trx, envId, role.id);
      }),

    ancestors: (env: EnvScope, path: ResourceRolePath) => related(env, path, "ancestors"),
    descendants: (env: EnvScope, path: ResourceRolePath) => related(env, path, "descendants"),

    createImplicitGrant: (env: EnvScope, path: ResourceRolePath, rule: DerivedRoleRuleCreate) =>
      writeRole(env, path, async (trx, envId, resource, role) => {
        const resolved = await resolveDerivation(trx, envId, resource, rule, ["body"]);
        if (await findDerivation(trx, envId, role.id, resolved)) {
          throw duplicate("implicit grant", `${resolved.read.on_resource}:${resolved.read.role}`);
        }
        await insertDerivations(trx, envId, role.id, [resolved]);
        return resolved.read;
      }),

    deleteImplicitGrant: (env: EnvScope, path: ResourceRolePath, rule: DerivedRoleRuleCreate) =>
      writeRole(env, path, async (trx, envId, resource, role) => {
        const resolved = await resolveDerivation(trx, envId, resource, rule, ["body"]);
        const existing = await findDerivation(trx, envId, role.id, resolved);
        if (!existing) {
          throw notFound(
            "implicit grant",
            `${resolved.read.on_resource}:${resolved.read.role} via ${resolved.read.linked_by_relation}`,
          );
        }
        await deleteDerivation(trx, existing.id);
      }),

    /** Sets the role-wide `no_direct_roles_on_object` of its derivations. */
    updateImplicitGrantConditions: (env: EnvScope, path: ResourceRolePath, settings: DerivationSettings) =>
      writeRole(env, path, async (trx, _envId, _resource, role) => {
        const value = settings.no_direct_roles_on_object ?? false;
        await updateRole(trx, role.id, { no_direct_roles_on_object: value ? 1 : 0, updated_at: now() });
        return { no_direct_roles_on_object: value };
      }),
  };
}

export type ResourceRolesService = ReturnType<typeof createResourceRolesService>;
