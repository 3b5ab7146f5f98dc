import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { AppError, invalid, notFound, notFoundOn } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import {
  findAction,
  findConditionSet,
  type ActionRow,
  type ConditionSetRow,
  type ResourceRow,
} from "../../domain/facts/facts.repo.ts";
import { Resolver, scopedIds, writeFacts, type Env } from "../../domain/facts/facts-write.ts";
import {
  deleteSetRule,
  findSetRule,
  insertSetRule,
  listSetRulesQuery,
  type SetRuleFilter,
  type SetRuleWithKeys,
} from "./set-rules.repo.ts";
import type { ConditionSetRuleCreate, ConditionSetRuleRead, SetRuleListQuery } from "./set-rules.schemas.ts";

export const setRuleRead = (r: SetRuleWithKeys): ConditionSetRuleRead => ({
  id: r.id,
  key: r.key,
  user_set: r.user_set_key,
  permission: `${r.resource_key}:${r.action_key}`,
  resource_set: r.resource_set_key,
  organization_id: r.organization_id,
  project_id: r.project_id,
  environment_id: r.environment_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const ruleChange = (r: SetRuleWithKeys, op: "upsert" | "delete"): Change => ({
  kind: "condition_set_rule",
  op,
  data: {
    user_set: r.user_set_key,
    permission: `${r.resource_key}:${r.action_key}`,
    resource_set: r.resource_set_key,
  },
});

interface ResolvedRule {
  userSet: ConditionSetRow;
  resourceSet: ConditionSetRow;
  resource: ResourceRow;
  action: ActionRow;
}

async function requireSet(resolver: Resolver, ref: string, type: "userset" | "resourceset", field: string) {
  const set = await findConditionSet(resolver.db, resolver.env.id, ref);
  if (!set) throw notFound(type === "userset" ? "user set" : "resource set", ref);
  if (set.type !== type)
    throw invalid(`condition set '${set.key}' is a ${set.type}, not a ${type}`, ["body", field]);
  return set;
}

/** user_set and resource_set are condition set keys or ids; permission is `resource:action`. */
async function resolveRule(resolver: Resolver, input: ConditionSetRuleCreate): Promise<ResolvedRule> {
  if (input.is_role || input.is_resource) {
    throw invalid("is_role and is_resource are not supported: name condition sets", [
      "body",
      input.is_role ? "is_role" : "is_resource",
    ]);
  }
  const colon = input.permission.indexOf(":");
  if (colon <= 0 || colon === input.permission.length - 1) {
    throw invalid(`permission '${input.permission}' must be 'resource:action'`, ["body", "permission"]);
  }
  const userSet = await requireSet(resolver, input.user_set, "userset", "user_set");
  const resourceSet = await requireSet(resolver, input.resource_set, "resourceset", "resource_set");
  const resource = await resolver.requireResource(input.permission.slice(0, colon));
  const actionRef = input.permission.slice(colon + 1);
  const action = await findAction(resolver.db, resolver.env.id, resource.id, actionRef);
  if (!action) {
    throw notFoundOn("action", actionRef, resource);
  }
  if (resourceSet.resource_id !== null && resourceSet.resource_id !== resource.id) {
    throw invalid(`resource set '${resourceSet.key}' is not a set of '${resource.key}' instances`, [
      "body",
      "resource_set",
    ]);
  }
  return { userSet, resourceSet, resource, action };
}

const keysOf = (r: ResolvedRule) => ({
  user_set_key: r.userSet.key,
  resource_set_key: r.resourceSet.key,
  resource_key: r.resource.key,
  action_key: r.action.key,
});

export function createSetRulesService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function resolveFilter(env: Env, q: SetRuleListQuery): Promise<SetRuleFilter | null> {
    const filter: SetRuleFilter = {};
    for (const [ref, field] of [
      [q.user_set, "userSetId"],
      [q.resource_set, "resourceSetId"],
    ] as const) {
      if (ref === undefined) continue;
      const set = await findConditionSet(db, env.id, ref);
      if (!set) return null;
      filter[field] = set.id;
    }
    if (q.permission !== undefined) {
      const [resourceRef, actionRef] = q.permission.split(":");
      const resource = resourceRef ? await new Resolver(db, env).resource(resourceRef) : undefined;
      const action = resource && actionRef ? await findAction(db, env.id, resource.id, actionRef) : undefined;
      if (!action) return null;
      filter.actionId = action.id;
    }
    return filter;
  }

  return {
    async list(
      { environment }: EnvScope,
      q: SetRuleListQuery,
      p: PageRequest,
    ): Promise<ConditionSetRuleRead[]> {
      const filter = await resolveFilter(environment, q);
      if (!filter) return [];
      const rows = await listSetRulesQuery(db, environment.id, filter, offsetOf(p), p.perPage).execute();
      return rows.map(setRuleRead);
    },

    /** Returns an array holding the rule, as Permit does. */
    async create({ environment }: EnvScope, input: ConditionSetRuleCreate): Promise<ConditionSetRuleRead[]> {
      return writeFacts(db, environment, async (resolver, changes) => {
        const resolved = await resolveRule(resolver, input);
        const keys = keysOf(resolved);
        const permission = `${keys.resource_key}:${keys.action_key}`;
        if (
          await findSetRule(
            resolver.db,
            environment.id,
            resolved.userSet.id,
            resolved.action.id,
            resolved.resourceSet.id,
          )
        ) {
          const name = `${keys.user_set_key} ${permission} ${keys.resource_set_key}`;
          throw new AppError("DUPLICATE_ENTITY", `condition set rule '${name}' already exists`, {
            object: "condition set rule",
            key: name,
          });
        }
        const at = now();
        const row = {
          id: newId(),
          ...scopedIds(environment),
          key: `${keys.user_set_key}_${keys.resource_key}_${keys.action_key}_${keys.resource_set_key}`,
          user_set_id: resolved.userSet.id,
          action_id: resolved.action.id,
          resource_set_id: resolved.resourceSet.id,
          created_at: at,
          updated_at: at,
        };
        await insertSetRule(resolver.db, row);
        const full = { ...row, ...keys };
        changes.push(ruleChange(full, "upsert"));
        return [setRuleRead(full)];
      });
    },

    async remove({ environment }: EnvScope, input: ConditionSetRuleCreate): Promise<void> {
      await writeFacts(db, environment, async (resolver, changes) => {
        const resolved = await resolveRule(resolver, input);
        const keys = keysOf(resolved);
        const row = await findSetRule(
          resolver.db,
          environment.id,
          resolved.userSet.id,
          resolved.action.id,
          resolved.resourceSet.id,
        );
        if (!row) {
          const name = `${keys.user_set_key} ${keys.resource_key}:${keys.action_key} ${keys.resource_set_key}`;
          throw new AppError("NOT_FOUND", `condition set rule '${name}' was not found`, {
            object: "condition set rule",
            ref: name,
          });
        }
        await deleteSetRule(resolver.db, environment.id, row.id);
        changes.push(ruleChange({ ...row, ...keys }, "delete"));
      });
    },
  };
}

export type SetRulesService = ReturnType<typeof createSetRulesService>;
