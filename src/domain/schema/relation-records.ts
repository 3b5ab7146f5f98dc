import type { Db } from "../../db/db.ts";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import type { SchemaChanges } from "./schema.changes.ts";
import { type RelationRow, type ResourceRow } from "./schema.repo.ts";
import { assertKeys, insertUnique, scopeColumns, writableResource } from "./schema-rules.ts";
import { deleteRelations, insertRelation, listRelationsOf, type RelationWithKeys } from "./relations.repo.ts";
import type { RelationRead } from "./schema.schemas.ts";

/**
 * Relation records inside the caller's transaction, shared by relations and resources (a resource's
 * relations are written with it).
 */

export const relationRead = (row: RelationWithKeys): RelationRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  subject_resource: row.subject_key,
  subject_resource_id: row.subject_resource_id,
  object_resource: row.object_key,
  object_resource_id: row.object_resource_id,
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export async function createRelationRecord(
  trx: Db,
  scope: EnvScope,
  object: ResourceRow,
  subject: ResourceRow,
  input: { key: string; name: string; description?: string | undefined },
  at = now(),
): Promise<RelationRow> {
  const row: RelationRow = {
    id: newId(),
    ...scopeColumns(scope),
    object_resource_id: object.id,
    subject_resource_id: subject.id,
    key: input.key,
    name: input.name,
    description: input.description ?? null,
    created_at: at,
    updated_at: at,
  };
  await insertUnique("relation", `${object.key}:${input.key}`, () => insertRelation(trx, row));
  return row;
}

/**
 * Makes the resource's relations exactly `relations` (relation key -> subject resource, a resource body's block).
 * A relation whose subject changes is a new relation: its tuples and the derivations through it go.
 */
export async function replaceRelations(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  object: ResourceRow,
  relations: Record<string, string>,
): Promise<void> {
  assertKeys(relations, "relation", ["body", "relations"]);
  const envId = scope.environment.id;
  const subjects = new Map<string, ResourceRow>();
  for (const [key, subjectRef] of Object.entries(relations)) {
    subjects.set(key, await writableResource(trx, envId, subjectRef));
  }
  const existing = new Map((await listRelationsOf(trx, envId, object.id)).map((r) => [r.key, r]));
  const stale = [...existing.values()].filter((r) => subjects.get(r.key)?.id !== r.subject_resource_id);
  await changes.relationsRemoved(stale.map((r) => r.id));
  await deleteRelations(
    trx,
    stale.map((r) => r.id),
  );
  for (const r of stale) existing.delete(r.key);
  const at = now();
  for (const [key, subject] of subjects) {
    if (!existing.has(key)) await createRelationRecord(trx, scope, object, subject, { key, name: key }, at);
  }
  changes.resource(object.id);
}
