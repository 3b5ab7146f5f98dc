import type { Insertable, Selectable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { ConditionSetRulesTable } from "../../db/types.ts";

export type SetRuleRow = Selectable<ConditionSetRulesTable>;
export interface SetRuleWithKeys extends SetRuleRow {
  user_set_key: string;
  resource_set_key: string;
  resource_key: string;
  action_key: string;
}

export interface SetRuleFilter {
  userSetId?: string | undefined;
  actionId?: string | undefined;
  resourceSetId?: string | undefined;
}

export const listSetRulesQuery = (db: Db, envId: string, f: SetRuleFilter, offset: number, limit: number) => {
  let q = db
    .selectFrom("condition_set_rules as csr")
    .innerJoin("condition_sets as us", "us.id", "csr.user_set_id")
    .innerJoin("condition_sets as rs", "rs.id", "csr.resource_set_id")
    .innerJoin("resource_actions as a", "a.id", "csr.action_id")
    .innerJoin("resources as res", "res.id", "a.resource_id")
    .selectAll("csr")
    .select([
      "us.key as user_set_key",
      "rs.key as resource_set_key",
      "res.key as resource_key",
      "a.key as action_key",
    ])
    .where("csr.environment_id", "=", envId);
  if (f.userSetId) q = q.where("csr.user_set_id", "=", f.userSetId);
  if (f.actionId) q = q.where("csr.action_id", "=", f.actionId);
  if (f.resourceSetId) q = q.where("csr.resource_set_id", "=", f.resourceSetId);
  return q.orderBy("csr.created_at").orderBy("csr.id").offset(offset).limit(limit);
};

export const findSetRule = (
  db: Db,
  envId: string,
  userSetId: string,
  actionId: string,
  resourceSetId: string,
): Promise<SetRuleRow | undefined> =>
  db
    .selectFrom("condition_set_rules")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("user_set_id", "=", userSetId)
    .where("action_id", "=", actionId)
    .where("resource_set_id", "=", resourceSetId)
    .executeTakeFirst();

export const insertSetRule = (db: Db, row: Insertable<ConditionSetRulesTable>) =>
  db.insertInto("condition_set_rules").values(row).execute();

export const deleteSetRule = (db: Db, envId: string, id: string) =>
  db.deleteFrom("condition_set_rules").where("environment_id", "=", envId).where("id", "=", id).execute();
