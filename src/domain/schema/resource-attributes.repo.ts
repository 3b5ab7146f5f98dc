import type { Insertable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ResourceAttributesTable } from "../../db/types.ts";
import type { AttributeRow } from "./schema.repo.ts";

/** The attribute reads and writes of resource-attribute-records.ts; the resource-attributes module uses them too. */

export const listAttributes = (
  db: Db,
  envId: string,
  resourceId: string,
  page?: { offset: number; limit: number },
): Promise<AttributeRow[]> => {
  let q = db
    .selectFrom("resource_attributes")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .orderBy("created_at")
    .orderBy("key");
  if (page) q = q.offset(page.offset).limit(page.limit);
  return q.execute();
};

export const insertAttribute = (db: Db, row: Insertable<ResourceAttributesTable>) =>
  db.insertInto("resource_attributes").values(row).execute();

export const updateAttribute = (
  db: Db,
  id: string,
  patch: Updateable<ResourceAttributesTable>,
): Promise<AttributeRow> =>
  db
    .updateTable("resource_attributes")
    .set(patch)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();

export const deleteAttributes = async (db: Db, ids: string[]): Promise<void> => {
  if (ids.length > 0) await db.deleteFrom("resource_attributes").where("id", "in", ids).execute();
};
