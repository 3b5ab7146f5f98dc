import type { Insertable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { TenantsTable } from "../../db/types.ts";
import { inChunks } from "./facts.repo.ts";

/** The tenant writes of tenant-records.ts. */

export const insertTenants = (db: Db, rows: Insertable<TenantsTable>[]) =>
  inChunks(rows, (slice) => db.insertInto("tenants").values(slice).execute());

/** Assignments, instances (with their tuples and assignments) and tuples in the tenants go too. */
export const deleteTenants = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db.deleteFrom("tenants").where("environment_id", "=", envId).where("id", "in", slice).execute(),
  );

/** The instances a tenant delete takes with it, so the feed can say so. */
export const instancesOfTenants = (
  db: Db,
  envId: string,
  tenantIds: string[],
): Promise<{ resource_key: string; key: string }[]> =>
  inChunks(tenantIds, (slice) =>
    db
      .selectFrom("resource_instances as ri")
      .innerJoin("resources as res", "res.id", "ri.resource_id")
      .select(["res.key as resource_key", "ri.key"])
      .where("ri.environment_id", "=", envId)
      .where("ri.tenant_id", "in", slice)
      .execute(),
  );
