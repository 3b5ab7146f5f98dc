import type { Db } from "../../db/db.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import type { SchemaChanges } from "./schema.changes.ts";
import { type ResourceGraph, type ResourceRow } from "./schema.repo.ts";
import { assertNotReserved, insertUnique, scopeColumns } from "./schema-rules.ts";
import { replaceActions } from "./resource-action-records.ts";
import { replaceAttributes } from "./resource-attribute-records.ts";
import { replaceRelations } from "./relation-records.ts";
import { replaceResourceRoles, resourceRoleRead } from "./resource-role-records.ts";
import { insertResource } from "./resources.repo.ts";
import type { ResourceRead, ResourceReplace, ResourceUpdate } from "./schema.schemas.ts";

/**
 * Resource records inside the caller's transaction and their API shape, shared by resources and
 * condition-sets.
 */

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
export async function replaceBlocks(
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

/** The columns a new (not built-in) resource row starts with, from its key and fields. */
export const resourceColumns = (
  key: string,
  input: {
    name: string;
    description?: string | undefined;
    urn?: string | undefined;
    type_attributes?: unknown;
  },
) => ({
  key,
  name: input.name,
  description: input.description ?? null,
  urn: input.urn ?? null,
  type_attributes: toJson(input.type_attributes),
  built_in: 0,
});

export async function createResourceRecords(
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
    ...resourceColumns(key, input),
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
