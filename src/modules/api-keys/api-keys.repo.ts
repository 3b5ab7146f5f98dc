import type { Db } from "../../db/db.ts";
import type { ApiKeyRow } from "../../domain/api-key-records.ts";

export const findApiKey = (db: Db, organizationId: string, id: string): Promise<ApiKeyRow | undefined> =>
  db
    .selectFrom("api_keys")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .executeTakeFirst();

export const findEnvironmentKey = (db: Db, environmentId: string): Promise<ApiKeyRow | undefined> =>
  db
    .selectFrom("api_keys")
    .selectAll()
    .where("environment_id", "=", environmentId)
    .where("object_type", "=", "env")
    .orderBy("created_at")
    .orderBy("id")
    .limit(1)
    .executeTakeFirst();

export async function listApiKeys(
  db: Db,
  organizationId: string,
  filter: { objectType?: string | undefined; projectId?: string | undefined },
  offset: number,
  limit: number,
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  let q = db.selectFrom("api_keys").where("organization_id", "=", organizationId);
  if (filter.objectType) q = q.where("object_type", "=", filter.objectType);
  if (filter.projectId) q = q.where("project_id", "=", filter.projectId);
  const rows = await q.selectAll().orderBy("created_at").orderBy("id").offset(offset).limit(limit).execute();
  const count = await q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

export const countOrgAdminKeys = async (db: Db, organizationId: string): Promise<number> => {
  const row = await db
    .selectFrom("api_keys")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("organization_id", "=", organizationId)
    .where("object_type", "=", "org")
    .where("access_level", "=", "admin")
    .executeTakeFirstOrThrow();
  return Number(row.n);
};

export const replaceSecret = (db: Db, id: string, secret: { hash: string; prefix: string; sealed: string }) =>
  db
    .updateTable("api_keys")
    .set({ secret_hash: secret.hash, secret_prefix: secret.prefix, secret_sealed: secret.sealed })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();

export const deleteApiKey = (db: Db, id: string) => db.deleteFrom("api_keys").where("id", "=", id).execute();
