import { sql, type Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { TenantsTable } from "../../db/types.ts";
import { searchAny, type TenantRow } from "../../domain/facts/facts.repo.ts";
import { seekAfter, type ListKey } from "../../domain/facts/list-pages.repo.ts";

function filteredTenants(db: Db, envId: string, search: string | undefined) {
  let q = db.selectFrom("tenants").where("environment_id", "=", envId);
  if (search) q = q.where(searchAny([sql.ref("key"), sql.ref("name")], search));
  return q;
}

export const listTenantsQuery = (
  db: Db,
  envId: string,
  search: string | undefined,
  offset: number,
  limit: number,
  after?: ListKey,
) =>
  filteredTenants(db, envId, search)
    .selectAll()
    .where(seekAfter("tenants", after))
    .orderBy("created_at")
    .orderBy("id")
    .offset(offset)
    .limit(limit);

export async function countTenants(db: Db, envId: string, search: string | undefined): Promise<number> {
  const row = await filteredTenants(db, envId, search)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export const updateTenant = (
  db: Db,
  envId: string,
  id: string,
  patch: Updateable<TenantsTable>,
): Promise<TenantRow> =>
  db
    .updateTable("tenants")
    .set(patch)
    .where("environment_id", "=", envId)
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
