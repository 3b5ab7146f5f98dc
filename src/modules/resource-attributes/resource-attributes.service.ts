import type { Kysely } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { schemaWrite } from "../../domain/schema/schema.changes.ts";
import { findResource, type ResourceRow } from "../../domain/schema/schema.repo.ts";
import type { EnvPath } from "../../domain/schema/schema.schemas.ts";
import { requireResource, scopeColumns, USER_RESOURCE_KEY } from "../../domain/schema/schema-rules.ts";
import {
  deleteAttributes,
  findAttribute,
  insertBuiltInResource,
  listAttributes,
  updateAttribute,
} from "./resource-attributes.repo.ts";
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

  /** The owning resource; for user attributes undefined until the first write creates it. */
  async function ownerForRead(
    db: Db,
    envId: string,
    owner: AttributeOwner,
  ): Promise<ResourceRow | undefined> {
    if ("resource" in owner) return requireResource(db, envId, owner.resource);
    return findResource(db, envId, USER_RESOURCE_KEY);
  }

  async function ownerForWrite(trx: Db, env: EnvScope, owner: AttributeOwner): Promise<ResourceRow> {
    if ("resource" in owner) return requireResource(trx, env.environment.id, owner.resource);
    const at = now();
    await insertBuiltInResource(trx, {
      id: newId(),
      ...scopeColumns(env),
      key: USER_RESOURCE_KEY,
      name: "User",
      description: "the attributes of users",
      urn: null,
      type_attributes: null,
      built_in: 1,
      created_at: at,
      updated_at: at,
    });
    return requireResource(trx, env.environment.id, USER_RESOURCE_KEY);
  }

  async function requireAttribute(db: Db, envId: string, resource: ResourceRow | undefined, ref: string) {
    const row = resource && (await findAttribute(db, envId, resource.id, ref));
    if (!row) throw notFound("attribute", `${resource?.key ?? USER_RESOURCE_KEY}:${ref}`);
    return row;
  }

  return {
    async list(
      { environment }: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      page: PageRequest,
    ): Promise<ResourceAttributeRead[]> {
      const resource = await ownerForRead(db, environment.id, owner);
      if (!resource) return [];
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
      const resource = await ownerForRead(db, environment.id, owner);
      const row = await requireAttribute(db, environment.id, resource, attributeRef);
      return attributeRead(row, resource?.key ?? USER_RESOURCE_KEY);
    },

    async create(
      env: EnvScope,
      path: EnvPath,
      owner: AttributeOwner,
      input: ResourceAttributeCreate,
    ): Promise<ResourceAttributeRead> {
      return schemaWrite(db, env.environment.id, async (trx, changes) => {
        const resource = await ownerForWrite(trx, env, owner);
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
        const resource = await ownerForRead(trx, envId, owner);
        const attribute = await requireAttribute(trx, envId, resource, attributeRef);
        const row = await updateAttribute(trx, attribute.id, {
          ...(input.type !== undefined && { type: input.type }),
          ...(input.description !== undefined && { description: input.description }),
          updated_at: now(),
        });
        changes.resource(attribute.resource_id);
        return attributeRead(row, resource?.key ?? USER_RESOURCE_KEY);
      });
    },

    async remove(env: EnvScope, path: EnvPath, owner: AttributeOwner, attributeRef: string): Promise<void> {
      const envId = env.environment.id;
      await schemaWrite(db, envId, async (trx, changes) => {
        const resource = await ownerForRead(trx, envId, owner);
        const attribute = await requireAttribute(trx, envId, resource, attributeRef);
        await deleteAttributes(trx, [attribute.id]);
        changes.resource(attribute.resource_id);
      });
    },
  };
}

export type ResourceAttributesService = ReturnType<typeof createResourceAttributesService>;
