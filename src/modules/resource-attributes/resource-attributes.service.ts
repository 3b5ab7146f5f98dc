import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { schemaWrite } from "../../domain/schema/schema.changes.ts";
import type { ResourceRow } from "../../domain/schema/schema.repo.ts";
import type { EnvPath } from "../../domain/schema/schema.schemas.ts";
import { USER_RESOURCE_KEY } from "../../domain/built-in-resources.ts";
import { requireResource } from "../../domain/schema/schema-rules.ts";
import { findAttribute } from "./resource-attributes.repo.ts";
import {
  deleteAttributes,
  listAttributes,
  updateAttribute,
} from "../../domain/schema/resource-attributes.repo.ts";
import type {
  ResourceAttributeCreate,
  ResourceAttributeRead,
  ResourceAttributeUpdate,
} from "./resource-attributes.schemas.ts";
import {
  attributeRead,
  AttributeOwner,
  createAttributeRecord,
} from "../../domain/schema/resource-attribute-records.ts";
export function createResourceAttributesService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  /** The owning resource: the one named in the path, or the built-in user resource. */
  const ownerOf = (db: Db, envId: string, owner: AttributeOwner): Promise<ResourceRow> =>
    requireResource(db, envId, "resource" in owner ? owner.resource : USER_RESOURCE_KEY);

  async function requireAttribute(db: Db, envId: string, resource: ResourceRow, ref: string) {
    const row = await findAttribute(db, envId, resource.id, ref);
    if (!row) throw notFound("attribute", `${resource.key}:${ref}`);
    return row;
  }

  return {
    async list(
      { environment }: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      page: PageRequest,
    ): Promise<ResourceAttributeRead[]> {
      const resource = await ownerOf(db, environment.id, owner);
      const rows = await listAttributes(db, environment.id, resource.id, {
        offset: offsetOf(page),
        limit: page.perPage,
      });
      return rows.map((r) => attributeRead(r, resource.key));
    },

    async get(
      { environment }: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      attributeRef: string,
    ): Promise<ResourceAttributeRead> {
      const resource = await ownerOf(db, environment.id, owner);
      const row = await requireAttribute(db, environment.id, resource, attributeRef);
      return attributeRead(row, resource.key);
    },

    async create(
      env: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      input: ResourceAttributeCreate,
    ): Promise<ResourceAttributeRead> {
      return schemaWrite(db, env.environment.id, async (trx, changes) => {
        const resource = await ownerOf(trx, env.environment.id, owner);
        const row = await createAttributeRecord(trx, env, resource, input.key, input);
        changes.resource(resource.id);
        return attributeRead(row, resource.key);
      });
    },

    async update(
      env: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      attributeRef: string,
      input: ResourceAttributeUpdate,
    ): Promise<ResourceAttributeRead> {
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const resource = await ownerOf(trx, envId, owner);
        const attribute = await requireAttribute(trx, envId, resource, attributeRef);
        const row = await updateAttribute(trx, attribute.id, {
          ...(input.type !== undefined && { type: input.type }),
          ...(input.description !== undefined && { description: input.description }),
          updated_at: now(),
        });
        changes.resource(attribute.resource_id);
        return attributeRead(row, resource.key);
      });
    },

    async remove(env: EnvScope, path: EnvPath, owner: AttributeOwner, attributeRef: string): Promise<void> {
      const envId = env.environment.id;
      await schemaWrite(db, envId, async (trx, changes) => {
        const resource = await ownerOf(trx, envId, owner);
        const attribute = await requireAttribute(trx, envId, resource, attributeRef);
        await deleteAttributes(trx, [attribute.id]);
        changes.resource(attribute.resource_id);
      });
    },
  };
}

export type ResourceAttributesService = ReturnType<typeof createResourceAttributesService>;
