import type { Kysely } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { notFound } from "../../lib/errors.ts";
import { isUuid, newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope, ScopeService } from "../../domain/path-scope.ts";
import { schemaWrite, type SchemaChanges } from "../../domain/schema/schema.changes.ts";
import {
  findResource,
  loadResourceGraphs,
  type ResourceGraph,
  type ResourceRow,
} from "../../domain/schema/schema.repo.ts";
import type { EnvPath, ResourcePath } from "../../domain/schema/schema.schemas.ts";
import {
  assertKey,
  assertNotReserved,
  insertUnique,
  requireResource,
  scopeColumns,
  writableResource,
} from "../../domain/schema/schema-rules.ts";
import { replaceActions } from "../resource-actions/resource-actions.service.ts";
import { replaceAttributes } from "../resource-attributes/resource-attributes.service.ts";
import { replaceRelations } from "../relations/relations.service.ts";
import { replaceResourceRoles, resourceRoleRead } from "../resource-roles/resource-roles.service.ts";
import { deleteResource, insertResource, listResourceIdsPage, updateResource } from "./resources.repo.ts";
import type { ResourceCreate, ResourceRead, ResourceReplace, ResourceUpdate } from "./resources.schemas.ts";

export const resourceRead = (graph: ResourceGraph): ResourceRead => {
  const { row } = graph;
  return {
    id: row.id,
    key: row.key,
    name: row.name,
    ...(row.urn !== null && { urn: row.urn }),
    ...(row.description !== null && { description: row.description }),
    ...(row.type_attributes !== null && { type_attributes: fromJsonObject(row.type_attributes) }),
    actions: Object.fromEntries(
      graph.actions.map((a) => [
        a.key,
        {
          id: a.id,
          key: a.key,
          name: a.name,
          ...(a.description !== null && { description: a.description }),
          ...(a.attributes !== null && { attributes: fromJsonObject(a.attributes) }),
        },
      ]),
    ),
    attributes: Object.fromEntries(
      graph.attributes.map((a) => [
        a.key,
        {
          id: a.id,
          key: a.key,
          type: a.type as ResourceRead["attributes"][string]["type"],
          ...(a.description !== null && { description: a.description }),
        },
      ]),
    ),
    roles: Object.fromEntries(graph.roles.map((r) => [r.row.key, resourceRoleRead(r)])),
    relations: Object.fromEntries(
      graph.relations.map((r) => [
        r.row.key,
        {
          resource_id: r.row.subject_resource_id,
          resource: r.subjectKey,
          relation_name: r.row.name,
          ...(r.row.description !== null && { description: r.row.description }),
        },
      ]),
    ),
    action_groups: Object.fromEntries(graph.groups.map((g) => [g.row.key, g.actionKeys])),
    organization_id: row.organization_id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
};

type Blocks = Pick<ResourceUpdate, "actions" | "attributes" | "roles" | "relations">;

/** Writes the blocks given, in dependency order: roles name actions, and derivations name relations. */
async function replaceBlocks(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  resource: ResourceRow,
  blocks: Blocks,
): Promise<void> {
  if (blocks.actions !== undefined) await replaceActions(trx, scope, changes, resource, blocks.actions);
  if (blocks.attributes !== undefined)
    await replaceAttributes(trx, scope, changes, resource, blocks.attributes);
  if (blocks.relations !== undefined) await replaceRelations(trx, scope, changes, resource, blocks.relations);
  if (blocks.roles !== undefined) await replaceResourceRoles(trx, scope, changes, resource, blocks.roles);
  changes.resource(resource.id);
}

async function createResourceRecords(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  key: string,
  input: ResourceReplace,
): Promise<ResourceRow> {
  assertNotReserved(key, "resource", ["body", "key"]);
  const at = now();
  const row: ResourceRow = {
    id: newId(),
    ...scopeColumns(scope),
    key,
    name: input.name,
    description: input.description ?? null,
    urn: input.urn ?? null,
    type_attributes: toJson(input.type_attributes),
    built_in: 0,
    created_at: at,
    updated_at: at,
  };
  await insertUnique("resource", key, () => insertResource(trx, row));
  await replaceBlocks(trx, scope, changes, row, {
    actions: input.actions,
    attributes: input.attributes ?? {},
    relations: input.relations ?? {},
    roles: input.roles ?? {},
  });
  return row;
}

export function createResourcesService(deps: { db: Kysely<Database>; scope: ScopeService }) {
  const { db, scope } = deps;
  const envScope = (principal: Principal, path: EnvPath, access: "read" | "write") =>
    scope.environment(principal, path.proj_id, path.env_id, { access });

  async function read(db: Db, envId: string, id: string): Promise<ResourceRead> {
    const [graph] = await loadResourceGraphs(db, envId, [id]);
    return resourceRead(graph as ResourceGraph);
  }

  return {
    async list(
      principal: Principal,
      path: EnvPath,
      query: {
        search?: string | undefined;
        include_built_in?: boolean | undefined;
        include_total_count?: boolean | undefined;
      },
      page: PageRequest,
    ): Promise<ResourceRead[] | Page<ResourceRead>> {
      const { environment } = await envScope(principal, path, "read");
      const { ids, total } = await listResourceIdsPage(
        db,
        environment.id,
        { search: query.search, includeBuiltIn: query.include_built_in ?? false },
        offsetOf(page),
        page.perPage,
      );
      const resources = (await loadResourceGraphs(db, environment.id, ids)).map(resourceRead);
      return query.include_total_count ? envelope(resources, total, page) : resources;
    },

    async get(principal: Principal, path: ResourcePath): Promise<ResourceRead> {
      const { environment } = await envScope(principal, path, "read");
      return read(db, environment.id, (await requireResource(db, environment.id, path.resource_id)).id);
    },

    /** Creates the resource with its actions, attributes, relations and roles, all or nothing. */
    async create(principal: Principal, path: EnvPath, input: ResourceCreate): Promise<ResourceRead> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const row = await createResourceRecords(trx, env, changes, input.key, input);
        return read(trx, envId, row.id);
      });
    },

    /**
     * Replaces the whole definition, or creates the resource under the key in the path when there is none.
     * Actions, attributes, relations and roles left out of the body are removed.
     */
    async replace(principal: Principal, path: ResourcePath, input: ResourceReplace): Promise<ResourceRead> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const existing = await findResource(trx, envId, path.resource_id);
        if (!existing) {
          if (isUuid(path.resource_id)) throw notFound("resource", path.resource_id);
          assertKey(path.resource_id, "resource", ["path", "resource_id"]);
          const row = await createResourceRecords(trx, env, changes, path.resource_id, input);
          return read(trx, envId, row.id);
        }
        const resource = await writableResource(trx, envId, existing.id);
        await updateResource(trx, resource.id, {
          name: input.name,
          urn: input.urn ?? null,
          description: input.description ?? null,
          type_attributes: toJson(input.type_attributes),
          updated_at: now(),
        });
        await replaceBlocks(trx, env, changes, resource, {
          actions: input.actions,
          attributes: input.attributes ?? {},
          relations: input.relations ?? {},
          roles: input.roles ?? {},
        });
        return read(trx, envId, resource.id);
      });
    },

    async update(principal: Principal, path: ResourcePath, input: ResourceUpdate): Promise<ResourceRead> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const resource = await writableResource(trx, envId, path.resource_id);
        await updateResource(trx, resource.id, {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.urn !== undefined && { urn: input.urn }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.type_attributes !== undefined && { type_attributes: toJson(input.type_attributes) }),
          updated_at: now(),
        });
        await replaceBlocks(trx, env, changes, resource, input);
        return read(trx, envId, resource.id);
      });
    },

    /**
     * Removes the resource and, through the foreign keys, everything that names it: its actions, attributes,
     * groups, roles, relations on either end, derivations, instances, tuples, role assignments, the condition
     * sets bound to it and set rules on its actions. The change feed says what that did elsewhere.
     */
    async remove(principal: Principal, path: ResourcePath): Promise<void> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      await schemaWrite(db, envId, async (trx, changes) => {
        const resource = await writableResource(trx, envId, path.resource_id);
        await changes.resourceRemoved(resource);
        await deleteResource(trx, resource.id);
      });
    },
  };
}

export type ResourcesService = ReturnType<typeof createResourcesService>;
