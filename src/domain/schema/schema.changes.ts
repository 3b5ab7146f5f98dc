import type { Kysely } from "kysely";
import { writeToEnvironment } from "../../changes/write-groups.ts";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";
import { fromJson } from "../../lib/json.ts";
import type {
  Change,
  ConditionSetData,
  ConditionSetType,
  RelationshipTupleRef,
  ResourceData,
  ResourceRoleData,
  TenantRoleData,
} from "../../pdp/engine/types.ts";
import {
  listActions,
  listConditionSetParents,
  listRoleRows,
  loadConditionSets,
  loadResourceGraphs,
  loadRoleGraphs,
  type ConditionSetRow,
  type ResourceGraph,
  type ResourceRow,
  type RoleGraph,
  type RoleRow,
  type SetRuleRef,
} from "./schema.repo.ts";
import {
  conditionSetIdsOfResource,
  resourcesDerivingFrom,
  resourcesRelatingTo,
  rolesExtending,
  setRulesUsing,
  tenantRolesUsingActions,
  tuplesUsingRelations,
} from "./schema-dependants.repo.ts";
import { writableResource } from "./schema-rules.ts";

/** The engine's view of a resource: every key, no ids. The one place a resource becomes a change record. */
export function resourceData(graph: ResourceGraph): ResourceData {
  return {
    key: graph.row.key,
    actions: graph.actions.map((a) => a.key),
    attributes: Object.fromEntries(
      graph.attributes.map((a) => [
        a.key,
        { type: a.type, ...(a.description !== null && { description: a.description }) },
      ]),
    ),
    action_groups: Object.fromEntries(graph.groups.map((g) => [g.row.key, g.actionKeys])),
    roles: Object.fromEntries(graph.roles.map((role) => [role.row.key, resourceRoleData(role)])),
    relations: Object.fromEntries(graph.relations.map((r) => [r.row.key, r.subjectKey])),
  };
}

function resourceRoleData(role: RoleGraph): ResourceRoleData {
  const noDirect = role.row.no_direct_roles_on_object === 1;
  return {
    permissions: role.permissions.map((p) => p.actionKey),
    extends: role.extends.map((e) => e.key),
    ...((role.derivations.length > 0 || noDirect) && {
      granted_to: {
        ...(noDirect && { when: { no_direct_roles_on_object: true } }),
        users_with_role: role.derivations.map((d) => ({
          role: d.sourceRoleKey,
          on_resource: d.sourceResourceKey,
          linked_by_relation: d.relationKey,
          ...(d.noDirectRolesOnObject && { when: { no_direct_roles_on_object: true } }),
        })),
      },
    }),
  };
}

export function tenantRoleData(role: RoleGraph): TenantRoleData {
  return {
    key: role.row.key,
    permissions: role.permissions.map((p) => `${p.resourceKey}:${p.actionKey}`),
    extends: role.extends.map((e) => e.key),
  };
}

export function conditionSetData(row: ConditionSetRow, resourceKey: string | null): ConditionSetData {
  return {
    key: row.key,
    type: row.type as ConditionSetType,
    resource: resourceKey,
    conditions: fromJson<unknown>(row.conditions) ?? {},
  };
}

const ruleId = (r: SetRuleRef) => `${r.user_set}\u0000${r.permission}\u0000${r.resource_set}`;

/**
 * Collects what one schema write changed, in engine terms, and turns it into the write's change records at the
 * end of its transaction. Objects are re-read then, so an upsert always carries the committed state; deletes are
 * noted (with what they take along) before the rows go, because the database cascades erase the evidence.
 */
export class SchemaChanges {
  private readonly resources = new Set<string>();
  private readonly deletedResources = new Map<string, string>();
  private readonly roles = new Set<string>();
  private readonly deletedRoles = new Map<string, string>();
  private readonly sets = new Set<string>();
  private readonly deletedSets = new Map<string, string>();
  private readonly deletedRules = new Map<string, SetRuleRef>();
  private readonly deletedTuples: RelationshipTupleRef[] = [];

  constructor(
    private readonly trx: Db,
    readonly envId: string,
  ) {}

  /** The resource, or something inside it, changed. */
  resource(id: string): void {
    this.resources.add(id);
  }

  /** The tenant role changed. */
  role(id: string): void {
    this.roles.add(id);
  }

  conditionSet(id: string): void {
    this.sets.add(id);
  }

  /** Before deleting actions: tenant roles lose permissions, set rules on them go. */
  async actionsRemoved(actionIds: string[]): Promise<void> {
    for (const id of await tenantRolesUsingActions(this.trx, this.envId, actionIds)) this.roles.add(id);
    for (const rule of await setRulesUsing(this.trx, this.envId, { actionIds })) {
      this.deletedRules.set(ruleId(rule), rule);
    }
  }

  /** Before deleting resource roles: roles of other resources derived from them lose those rules. */
  async resourceRolesRemoved(roleIds: string[]): Promise<void> {
    for (const id of await resourcesDerivingFrom(this.trx, this.envId, roleIds)) this.resources.add(id);
  }

  /**
   * Before deleting relations: their tuples go. The engine names tuples by relation key, so without these records
   * a relation created again under the same key would bring the deleted tuples back to life in the PDP.
   */
  async relationsRemoved(relationIds: string[]): Promise<void> {
    this.deletedTuples.push(...(await tuplesUsingRelations(this.trx, this.envId, relationIds)));
  }

  /** Before deleting a tenant role: roles extending it lose it. */
  async tenantRoleRemoved(role: RoleRow): Promise<void> {
    this.deletedRoles.set(role.id, role.key);
    for (const id of await rolesExtending(this.trx, this.envId, role.id)) this.roles.add(id);
  }

  /** Before deleting condition sets: their descendants (parent_id cascades) and set rules naming any of them go. */
  async conditionSetsRemoved(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const all = await listConditionSetParents(this.trx, this.envId);
    const removed = new Set(ids);
    for (let grew = true; grew;) {
      grew = false;
      for (const set of all) {
        if (set.parent_id !== null && removed.has(set.parent_id) && !removed.has(set.id)) {
          removed.add(set.id);
          grew = true;
        }
      }
    }
    const keyOf = new Map(all.map((s) => [s.id, s.key]));
    for (const id of removed) this.deletedSets.set(id, keyOf.get(id) ?? id);
    for (const rule of await setRulesUsing(this.trx, this.envId, { conditionSetIds: [...removed] })) {
      this.deletedRules.set(ruleId(rule), rule);
    }
  }

  /** Before deleting a resource: everything elsewhere in the schema that names it. */
  async resourceRemoved(resource: ResourceRow): Promise<void> {
    this.deletedResources.set(resource.id, resource.key);
    const actions = await listActions(this.trx, this.envId, resource.id);
    await this.actionsRemoved(actions.map((a) => a.id));
    const roles = await listRoleRows(this.trx, this.envId, resource.id);
    await this.resourceRolesRemoved(roles.map((r) => r.id));
    for (const id of await resourcesRelatingTo(this.trx, this.envId, resource.id)) this.resources.add(id);
    await this.conditionSetsRemoved(await conditionSetIdsOfResource(this.trx, this.envId, resource.id));
  }

  /** The write's change records, to append as one revision of the environment. */
  async records(): Promise<Change[]> {
    const { trx, envId } = this;
    const records: Change[] = [];
    for (const key of this.deletedResources.values()) {
      records.push({ kind: "resource", op: "delete", data: { key } });
    }
    const resourceIds = [...this.resources].filter((id) => !this.deletedResources.has(id));
    for (const graph of await loadResourceGraphs(trx, envId, resourceIds)) {
      records.push({ kind: "resource", op: "upsert", data: resourceData(graph) });
    }
    for (const key of this.deletedRoles.values()) records.push({ kind: "role", op: "delete", data: { key } });
    const roleIds = [...this.roles].filter((id) => !this.deletedRoles.has(id));
    for (const graph of await loadRoleGraphs(trx, envId, roleIds)) {
      if (graph.row.resource_id === null) {
        records.push({ kind: "role", op: "upsert", data: tenantRoleData(graph) });
      }
    }
    for (const tuple of this.deletedTuples) {
      records.push({ kind: "relationship_tuple", op: "delete", data: tuple });
    }
    for (const rule of this.deletedRules.values()) {
      records.push({ kind: "condition_set_rule", op: "delete", data: rule });
    }
    for (const key of this.deletedSets.values()) {
      records.push({ kind: "condition_set", op: "delete", data: { key } });
    }
    const setIds = [...this.sets].filter((id) => !this.deletedSets.has(id));
    for (const row of await loadConditionSets(trx, envId, setIds)) {
      records.push({ kind: "condition_set", op: "upsert", data: conditionSetData(row, row.resource_key) });
    }
    return records;
  }
}

/**
 * Runs one schema write in one transaction and appends its change records in that same transaction, as one
 * revision (shared with concurrent writes to the environment: src/changes/write-groups.ts).
 */
export function schemaWrite<T>(
  db: Kysely<Database>,
  envId: string,
  fn: (trx: Db, changes: SchemaChanges) => Promise<T>,
): Promise<T> {
  return writeToEnvironment(db, envId, async (trx) => {
    const changes = new SchemaChanges(trx, envId);
    const result = await fn(trx, changes);
    return { result, records: await changes.records() };
  });
}

/**
 * A schema write on one resource the caller may change (`ref` its id or key), which it marks changed: an action, an
 * attribute, an action group or a role of that resource.
 */
export function resourceWrite<T>(
  db: Kysely<Database>,
  envId: string,
  ref: string,
  fn: (trx: Db, resource: ResourceRow, changes: SchemaChanges) => Promise<T>,
): Promise<T> {
  return schemaWrite(db, envId, async (trx, changes) => {
    const resource = await writableResource(trx, envId, ref);
    const result = await fn(trx, resource, changes);
    changes.resource(resource.id);
    return result;
  });
}
