import type { Insertable, Selectable, Updateable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ProxyConfigsTable } from "../../db/types.ts";

export type ProxyConfigRow = Selectable<ProxyConfigsTable>;

export const insertProxyConfig = (db: Db, row: Insertable<ProxyConfigsTable>) =>
  db.insertInto("proxy_configs").values(row).execute();

/** By id or key. */
export const findProxyConfig = (db: Db, envId: string, ref: string): Promise<ProxyConfigRow | undefined> =>
  db
    .selectFrom("proxy_configs")
    .selectAll()
    .where("environment_id", "=", envId)
    .where((eb) => eb.or([eb("id", "=", ref), eb("key", "=", ref)]))
    .executeTakeFirst();

export const listProxyConfigs = (db: Db, envId: string, offset: number, limit: number) =>
  db
    .selectFrom("proxy_configs")
    .selectAll()
    .where("environment_id", "=", envId)
    .orderBy("created_at")
    .orderBy("id")
    .offset(offset)
    .limit(limit)
    .execute();

export const updateProxyConfig = (db: Db, id: string, patch: Updateable<ProxyConfigsTable>) =>
  db.updateTable("proxy_configs").set(patch).where("id", "=", id).returningAll().executeTakeFirstOrThrow();

export const deleteProxyConfig = (db: Db, id: string) =>
  db.deleteFrom("proxy_configs").where("id", "=", id).execute();

/** The action keys of the environment's resources, by resource key (built-in resources have no actions here). */
export async function actionsByResource(db: Db, envId: string, resourceKeys: string[]) {
  const out = new Map<string, Set<string>>();
  if (resourceKeys.length === 0) return out;
  const rows = await db
    .selectFrom("resources as r")
    .leftJoin("resource_actions as a", "a.resource_id", "r.id")
    .select(["r.key as resource", "a.key as action"])
    .where("r.environment_id", "=", envId)
    .where("r.key", "in", resourceKeys)
    .execute();
  for (const row of rows) {
    const actions = out.get(row.resource) ?? new Set<string>();
    if (row.action !== null) actions.add(row.action);
    out.set(row.resource, actions);
  }
  return out;
}
