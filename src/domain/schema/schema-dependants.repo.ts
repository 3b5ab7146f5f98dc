import type { Db } from "../../db/db.ts";
import { setRuleKeysQuery, toSetRuleRef, type SetRuleRef } from "./schema.repo.ts";

/*
 * What a delete of a schema object takes with it, read before the delete so that the change feed can say so
 * (schema.changes.ts): the roles, resources, condition sets, set rules and tuples that name the object.
 */

/** Tenant roles holding a permission on any of these actions. */
export async function tenantRolesUsingActions(db: Db, envId: string, actionIds: string[]): Promise<string[]> {
  if (actionIds.length === 0) return [];
  const rows = await db
    .selectFrom("role_permissions as rp")
    .innerJoin("roles as r", "r.id", "rp.role_id")
    .select("r.id")
    .distinct()
    .where("rp.environment_id", "=", envId)
    .where("rp.action_id", "in", actionIds)
    .where("r.resource_id", "is", null)
    .execute();
  return rows.map((r) => r.id);
}

/** Resources whose roles derive from any of these roles. */
export async function resourcesDerivingFrom(
  db: Db,
  envId: string,
  sourceRoleIds: string[],
): Promise<string[]> {
  if (sourceRoleIds.length === 0) return [];
  const rows = await db
    .selectFrom("role_derivations as d")
    .innerJoin("roles as r", "r.id", "d.role_id")
    .select("r.resource_id")
    .distinct()
    .where("d.environment_id", "=", envId)
    .where("d.source_role_id", "in", sourceRoleIds)
    .execute();
  return rows.flatMap((r) => r.resource_id ?? []);
}

/** Resources with a relation whose subject is this resource. */
export async function resourcesRelatingTo(
  db: Db,
  envId: string,
  subjectResourceId: string,
): Promise<string[]> {
  const rows = await db
    .selectFrom("relations")
    .select("object_resource_id")
    .distinct()
    .where("environment_id", "=", envId)
    .where("subject_resource_id", "=", subjectResourceId)
    .execute();
  return rows.map((r) => r.object_resource_id);
}

/** Tenant roles extending this role. */
export async function rolesExtending(db: Db, envId: string, roleId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("role_extends")
    .select("role_id")
    .where("environment_id", "=", envId)
    .where("extends_role_id", "=", roleId)
    .execute();
  return rows.map((r) => r.role_id);
}

export async function conditionSetIdsOfResource(
  db: Db,
  envId: string,
  resourceId: string,
): Promise<string[]> {
  const rows = await db
    .selectFrom("condition_sets")
    .select("id")
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .execute();
  return rows.map((r) => r.id);
}

/** Set rules naming any of these actions or condition sets, as the engine names them. */
export async function setRulesUsing(
  db: Db,
  envId: string,
  using: { actionIds?: string[]; conditionSetIds?: string[] },
): Promise<SetRuleRef[]> {
  const actionIds = using.actionIds ?? [];
  const setIds = using.conditionSetIds ?? [];
  if (actionIds.length === 0 && setIds.length === 0) return [];
  const rows = await setRuleKeysQuery(db, envId)
    .where((eb) =>
      eb.or([
        ...(actionIds.length > 0 ? [eb("csr.action_id", "in", actionIds)] : []),
        ...(setIds.length > 0
          ? [eb("csr.user_set_id", "in", setIds), eb("csr.resource_set_id", "in", setIds)]
          : []),
      ]),
    )
    .execute();
  return rows.map(toSetRuleRef);
}

/** Tuples through any of these relations, as the engine names them ("type:key"). */
export async function tuplesUsingRelations(
  db: Db,
  envId: string,
  relationIds: string[],
): Promise<{ subject: string; relation: string; object: string }[]> {
  if (relationIds.length === 0) return [];
  const rows = await db
    .selectFrom("relationship_tuples as t")
    .innerJoin("relations as rel", "rel.id", "t.relation_id")
    .innerJoin("resource_instances as si", "si.id", "t.subject_id")
    .innerJoin("resources as sr", "sr.id", "si.resource_id")
    .innerJoin("resource_instances as oi", "oi.id", "t.object_id")
    .innerJoin("resources as orr", "orr.id", "oi.resource_id")
    .select([
      "sr.key as subject_type",
      "si.key as subject_key",
      "rel.key as relation",
      "orr.key as object_type",
      "oi.key as object_key",
    ])
    .where("t.environment_id", "=", envId)
    .where("t.relation_id", "in", relationIds)
    .execute();
  return rows.map((r) => ({
    subject: `${r.subject_type}:${r.subject_key}`,
    relation: r.relation,
    object: `${r.object_type}:${r.object_key}`,
  }));
}
