import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import { envelope, offsetOf, type Page, type PageRequest } from "../../lib/pagination.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { schemaWrite } from "../../domain/schema/schema.changes.ts";
import { findRelation, type ResourceRow } from "../../domain/schema/schema.repo.ts";
import type { ResourcePath } from "../../domain/schema/schema.schemas.ts";
import { requireResource, writableResource } from "../../domain/schema/schema-rules.ts";
import { findRelationWithKeys, listRelationsPage } from "./relations.repo.ts";
import { deleteRelations, type RelationWithKeys } from "../../domain/schema/relations.repo.ts";
import type { RelationCreate, RelationPath, RelationRead } from "./relations.schemas.ts";
import { relationRead, createRelationRecord } from "../../domain/schema/relation-records.ts";
export function createRelationsService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function requireRelation(db: Db, envId: string, object: ResourceRow, ref: string) {
    const row = await findRelation(db, envId, object.id, ref);
    if (!row) throw notFound("relation", `${object.key}:${ref}`);
    return row;
  }

  const read = async (db: Db, envId: string, id: string) =>
    relationRead((await findRelationWithKeys(db, envId, id)) as RelationWithKeys);

  return {
    async list(
      { environment }: EnvScope,
      path: ResourcePath,
      page: PageRequest,
    ): Promise<Page<RelationRead>> {
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

    async get({ environment }: EnvScope, path: RelationPath): Promise<RelationRead> {
      const object = await requireResource(db, environment.id, path.resource_id);
      const relation = await requireRelation(db, environment.id, object, path.relation_id);
      return read(db, environment.id, relation.id);
    },

    /** The resource in the path is the relation's object; the body names its subject. */
    async create(env: EnvScope, path: ResourcePath, input: RelationCreate): Promise<RelationRead> {
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
    async remove(env: EnvScope, path: RelationPath): Promise<void> {
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
