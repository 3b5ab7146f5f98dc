import type { Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ResourceInstancesTable } from "../../db/types.ts";
import { inChunks, type InstanceRow } from "./facts.repo.ts";

/** The instance writes of instance-records.ts (the resource-instances module updates with them too). */

export const updateInstance = (
  db: Db,
  envId: string,
  id: string,
  patch: Updateable<ResourceInstancesTable>,
): Promise<InstanceRow> =>
  db
    .updateTable("resource_instances")
    .set(patch)
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();

/** Tuples and role assignments on the instances go too (foreign keys cascade). */
export const deleteInstances = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db
      .deleteFrom("resource_instances")
      .where("environment_id", "=", envId)
      .where("id", "in", slice)
      .execute(),
  );
