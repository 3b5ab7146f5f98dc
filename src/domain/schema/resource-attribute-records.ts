import type { Db } from "../../db/db.ts";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import type { SchemaChanges } from "./schema.changes.ts";
import { type AttributeRow, type ResourceRow } from "./schema.repo.ts";
import { assertKeys, insertUnique, scopeColumns } from "./schema-rules.ts";
import {
  deleteAttributes,
  insertAttribute,
  listAttributes,
  updateAttribute,
} from "./resource-attributes.repo.ts";
import type { AttributeBlockEditable, ResourceAttributeRead } from "./schema.schemas.ts";

/**
 * Resource attribute records inside the caller's transaction, shared by resource-attributes and resources
 * (a resource's attributes are written with it).
 */

export const attributeRead = (row: AttributeRow, resourceKey: string): ResourceAttributeRead => ({
  id: row.id,
  key: row.key,
  type: row.type as ResourceAttributeRead["type"],
  ...(row.description !== null && { description: row.description }),
  resource_id: row.resource_id,
  resource_key: resourceKey,
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
  built_in: row.built_in === 1,
});

export async function createAttributeRecord(
  trx: Db,
  scope: EnvScope,
  resource: ResourceRow,
  key: string,
  block: AttributeBlockEditable,
  at = now(),
): Promise<AttributeRow> {
  const row: AttributeRow = {
    id: newId(),
    ...scopeColumns(scope),
    resource_id: resource.id,
    key,
    type: block.type,
    description: block.description ?? null,
    built_in: 0,
    created_at: at,
    updated_at: at,
  };
  await insertUnique("attribute", `${resource.key}:${key}`, () => insertAttribute(trx, row));
  return row;
}

/** Makes the resource's attributes exactly `attributes` (a resource body's block); kept keys keep their ids. */
export async function replaceAttributes(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  resource: ResourceRow,
  attributes: Record<string, AttributeBlockEditable>,
): Promise<void> {
  assertKeys(attributes, "attribute", ["body", "attributes"]);
  const at = now();
  const existing = new Map(
    (await listAttributes(trx, scope.environment.id, resource.id)).map((a) => [a.key, a]),
  );
  await deleteAttributes(
    trx,
    [...existing.values()].filter((a) => !Object.hasOwn(attributes, a.key)).map((a) => a.id),
  );
  for (const [key, block] of Object.entries(attributes)) {
    const current = existing.get(key);
    if (!current) await createAttributeRecord(trx, scope, resource, key, block, at);
    else {
      await updateAttribute(trx, current.id, {
        type: block.type,
        description: block.description ?? null,
        updated_at: at,
      });
    }
  }
  changes.resource(resource.id);
}

/** Whose attributes a route manages: a resource named in the path, or the built-in user resource. */
export type AttributeOwner = { resource: string } | { users: true };

/**
 * Attributes of resources, and user attributes, which are the attributes of the built-in `__user` resource.
 * Every environment has that resource from its creation (built-in-resources.ts).
 */
