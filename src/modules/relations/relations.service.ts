import type { Kysely } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope, ScopeService } from "../../domain/path-scope.ts";
import { schemaWrite, type SchemaChanges } from "../../domain/schema/schema.changes.ts";
import { findRelation, type RelationRow, type ResourceRow } from "../../domain/schema/schema.repo.ts";
import type { EnvPath, ResourcePath } from "../../domain/schema/schema.schemas.ts";
import {
  assertKeys,
  insertUnique,
  requireResource,
  scopeColumns,
  writableResource,
} from "../../domain/schema/schema-rules.ts";
import {
  deleteRelations,
  findRelationWithKeys,
  insertRelation,
  listRelationsOf,
  listRelationsPage,
  type RelationWithKeys,
} from "./relations.repo.ts";
import type { RelationCreate, RelationPath, RelationRead } from "./relations.schemas.ts";

const relationRead = (row: RelationWithKeys): RelationRead => ({
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

async function createRelationRecord(
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

export function createRelationsService(deps: { db: Kysely<Database>; scope: ScopeService }) {
  const { db, scope } = deps;
  const envScope = (principal: Principal, path: EnvPath, access: "read" | "write") =>
    scope.environment(principal, path.proj_id, path.env_id, { access });

  async function requireRelation(db: Db, envId: string, object: ResourceRow, ref: string) {
    const row = await findRelation(db, envId, object.id, ref);
    if (!row) throw notFound("relation", `${object.key}:${ref}`);
    return row;
  }

  const read = async (db: Db, envId: string, id: string) =>
    relationRead((await findRelationWithKeys(db, envId, id)) as RelationWithKeys);

  return {
    async list(principal: Principal, path: ResourcePath, page: PageRequest): Promise<Page<RelationRead>> {
      const { environment } = await envScope(principal, path, "read");
      const object = await requireResource(db, environment.id, path.resource_id);
      const { rows, total } = await listRelationsPage(
        db,
        environment.id,
        object.id,
        offsetOf(page),
        page.perPage,
      );
      return envelope(rows.map(relationRead), total, page);
    },

    async get(principal: Principal, path: RelationPath): Promise<RelationRead> {
      const { environment } = await envScope(principal, path, "read");
      const object = await requireResource(db, environment.id, path.resource_id);
      const relation = await requireRelation(db, environment.id, object, path.relation_id);
      return read(db, environment.id, relation.id);
    },

    /** The resource in the path is the relation's object; the body names its subject. */
    async create(principal: Principal, path: ResourcePath, input: RelationCreate): Promise<RelationRead> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      return schemaWrite(db, envId, async (trx, changes) => {
        const object = await writableResource(trx, envId, path.resource_id);
        const subject = await writableResource(trx, envId, input.subject_resource);
        const row = await createRelationRecord(trx, env, object, subject, input);
        changes.resource(object.id);
        return read(trx, envId, row.id);
      });
    },

    /** Removes the relation with its tuples and the role derivations through it. */
    async remove(principal: Principal, path: RelationPath): Promise<void> {
      const env = await envScope(principal, path, "write");
      const envId = env.environment.id;
      await schemaWrite(db, envId, async (trx, changes) => {
        const object = await writableResource(trx, envId, path.resource_id);
        const relation = await requireRelation(trx, envId, object, path.relation_id);
        await changes.relationsRemoved([relation.id]);
        await deleteRelations(trx, [relation.id]);
        changes.resource(object.id);
      });
    },
  };
}

export type RelationsService = ReturnType<typeof createRelationsService>;
