import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import { isUuid } from "../../lib/ids.ts";
import { toJson } from "../../lib/json.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { schemaWrite } from "../../domain/schema/schema.changes.ts";
import { findResource, loadResourceGraphs, type ResourceGraph } from "../../domain/schema/schema.repo.ts";
import type { EnvPath, ResourcePath } from "../../domain/schema/schema.schemas.ts";
import { assertKey, requireResource, writableResource } from "../../domain/schema/schema-rules.ts";
import { deleteResource, listResourceIdsPage, updateResource } from "./resources.repo.ts";
import type { ResourceCreate, ResourceRead, ResourceReplace, ResourceUpdate } from "./resources.schemas.ts";
import { resourceRead, createResourceRecords, replaceBlocks } from "../../domain/schema/resource-records.ts";
export function createResourcesService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function read(db: Db, envId: string, id: string): Promise<ResourceRead> {
    const [graph] = await loadResourceGraphs(db, envId, [id]);
    return resourceRead(graph as ResourceGraph);
  }

  return {
    async list(
      { environment }: EnvScope,
      path: EnvPath,
      query: {
        search?: string | undefined;
        include_built_in?: boolean | undefined;
        include_total_count?: boolean | undefined;
      },
      page: PageRequest,
    ): Promise<ResourceRead[] | Page<ResourceRead>> {
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

    async get({ environment }: EnvScope, path: ResourcePath): Promise<ResourceRead> {
      return read(db, environment.id, (await requireResource(db, environment.id, path.resource_id)).id);
    },

    /** Creates the resource with its actions, attributes, relations and roles, all or nothing. */
    async create(env: EnvScope, path: EnvPath, input: ResourceCreate): Promise<ResourceRead> {
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
    async replace(env: EnvScope, path: ResourcePath, input: ResourceReplace): Promise<ResourceRead> {
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

    async update(env: EnvScope, path: ResourcePath, input: ResourceUpdate): Promise<ResourceRead> {
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
    async remove(env: EnvScope, path: ResourcePath): Promise<void> {
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
