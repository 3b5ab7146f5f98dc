import type { Db } from "../../db/db.ts";
import { idOrKey } from "../../lib/ids.ts";
import type { AttributeRow } from "../../domain/schema/schema.repo.ts";

export const findAttribute = (
  db: Db,
  envId: string,
  resourceId: string,
  ref: string,
): Promise<AttributeRow | undefined> => {
  const { column, value } = idOrKey(ref);
  return db
    .selectFrom("resource_attributes")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .where(column, "=", value)
    .executeTakeFirst();
};
