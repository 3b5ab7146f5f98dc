import type { Insertable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ResourcesTable } from "../../db/types.ts";

/** The resource insert of resource-records.ts. */

export const insertResource = (db: Db, row: Insertable<ResourcesTable>) =>
  db.insertInto("resources").values(row).execute();
