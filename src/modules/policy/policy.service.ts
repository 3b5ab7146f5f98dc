import type { Kysely } from "kysely";
import { appendChanges } from "../../changes/feed.ts";
import { isPostgres, type Db } from "../../db/db.ts";
import type { Dialect } from "../../db/store.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Database } from "../../db/types.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { tuplesUsingRelations } from "../../domain/schema/schema-dependants.repo.ts";
import { AppError } from "../../lib/errors.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import { planCopy } from "../environment-copy/environment-copy.plan.ts";
import {
  deleteByIds,
  listRuleKeys,
  readPolicyRows,
  type PolicyRows,
} from "../environment-copy/environment-copy.repo.ts";
import { applyPlan, engineRecords } from "../environment-copy/environment-copy.apply.ts";
import { diffPolicies, type PolicyChange } from "./policy.diff.ts";
import { parsePolicy, toYaml, type PolicyDoc } from "./policy.format.ts";
import { policyFromRows, rowsFromPolicy } from "./policy.rows.ts";
import { canonicalFacts, parseFacts, readFacts, writeFactsDoc } from "./policy.facts.ts";

type ReadFactsDoc = ReturnType<typeof parseFacts>;

export interface DangerousChange {
  object: string;
  key: string;
  reason: string;
}

export interface PolicyPlan {
  /** the environment's revision the plan was made at: apply takes it back */
  revision: number;
  changes: PolicyChange[];
  dangerous: DangerousChange[];
  summary: { create: number; update: number; delete: number };
}

/** The environment's revision, locked until the transaction ends on PostgreSQL (SQLite has one writer anyway). */
async function lockedRevision(trx: Db, envId: string): Promise<number> {
  let query = trx.selectFrom("environments").select("revision").where("id", "=", envId);
  if (isPostgres(trx)) query = query.forUpdate();
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.revision);
}

const summaryOf = (changes: PolicyChange[]) => ({
  create: changes.filter((c) => c.op === "create").length,
  update: changes.filter((c) => c.op === "update").length,
  delete: changes.filter((c) => c.op === "delete").length,
});

/** Deletions that lose facts or silently change what a condition set matches. */
async function dangerousChanges(db: Db, envId: string, rows: PolicyRows, changes: PolicyChange[]) {
  const out: DangerousChange[] = [];
  const resourceId = new Map(rows.resources.map((r) => [r.key, r.id]));
  const roleId = new Map(
    rows.roles.map((r) => [
      r.resource_id === null ? r.key : `${rows.resources.find((x) => x.id === r.resource_id)?.key}:${r.key}`,
      r.id,
    ]),
  );
  const count = async (
    table: "role_assignments" | "resource_instances",
    column: "role_id" | "resource_id",
    id: string,
  ) => {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("environment_id", "=", envId)
      .where(column, "=", id)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  };
  const setsUsing = (attribute: string, prefix: string, resourceKey?: string) =>
    rows.conditionSets
      .filter(
        (s) =>
          (resourceKey === undefined || s.resource_id === resourceId.get(resourceKey)) &&
          (s.conditions ?? "").includes(JSON.stringify(`${prefix}.${attribute}`)),
      )
      .map((s) => s.key);
  for (const c of changes) {
    if (c.op !== "delete") continue;
    if (c.object === "role" || c.object === "resource_role") {
      const id = roleId.get(c.key);
      const n = id === undefined ? 0 : await count("role_assignments", "role_id", id);
      if (n > 0)
        out.push({ object: c.object, key: c.key, reason: `${n} role assignment(s) are removed with it` });
    } else if (c.object === "resource") {
      const id = resourceId.get(c.key);
      const n = id === undefined ? 0 : await count("resource_instances", "resource_id", id);
      if (n > 0) {
        out.push({ object: c.object, key: c.key, reason: `${n} resource instance(s) are removed with it` });
      }
    } else if (c.object === "attribute" || c.object === "user_attribute" || c.object === "tenant_attribute") {
      const [resource, attribute] =
        c.object === "attribute" ? (c.key.split(":") as [string, string]) : [undefined, c.key];
      const prefix =
        c.object === "attribute" ? "resource" : c.object === "user_attribute" ? "user" : "tenant";
      const sets = setsUsing(attribute, prefix, resource);
      if (sets.length > 0) {
        out.push({ object: c.object, key: c.key, reason: `used by condition set(s) ${sets.join(", ")}` });
      }
    }
  }
  return out;
}

export function createPolicyService(deps: { db: Kysely<Database>; dialect: Dialect }) {
  const { db, dialect } = deps;

  /** One consistent read of the environment's policy and its revision. */
  const readCurrent = (envId: string, withFacts = false) => {
    const tx =
      dialect === "postgres" ? db.transaction().setIsolationLevel("repeatable read") : db.transaction();
    return tx.execute(async (trx) => {
      const revision = await trx
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", envId)
        .executeTakeFirstOrThrow();
      const rows = await readPolicyRows(trx, envId);
      const facts = withFacts ? await readFacts(trx, envId) : undefined;
      return { revision: Number(revision.revision), rows, facts };
    });
  };

  async function planOf(envId: string, doc: PolicyDoc): Promise<PolicyPlan> {
    const { revision, rows } = await readCurrent(envId);
    const changes = diffPolicies(policyFromRows(rows), doc);
    return {
      revision,
      changes,
      dangerous: await dangerousChanges(db, envId, rows, changes),
      summary: summaryOf(changes),
    };
  }

  /**
   * With a facts section the plan is the apply itself, rolled back: what the facts create depends on the schema the
   * file brings, and a bad reference is the same 422.
   */
  async function planWithFacts(
    env: EnvScope["environment"],
    doc: PolicyDoc,
    facts: NonNullable<ReadFactsDoc>,
  ) {
    const { revision, rows } = await readCurrent(env.id);
    const schemaChanges = diffPolicies(policyFromRows(rows), doc);
    const dangerous = await dangerousChanges(db, env.id, rows, schemaChanges);
    const rollback = new Error("plan only");
    let changes: PolicyChange[] = [];
    await db
      .transaction()
      .execute(async (trx) => {
        changes = (await applyAll(trx, env, doc, facts)).changes;
        throw rollback;
      })
      .catch((e: unknown) => {
        if (e !== rollback) throw e;
      });
    return { revision, changes, dangerous, summary: summaryOf(changes) };
  }

  /**
   * Makes the environment hold the document, in one transaction and one revision: objects the document lacks are
   * deleted, the rest goes through the environment copy's planner (overwrite, everything in scope), and the change
   * records say what the PDPs must now hold (the caller appends them).
   */
  async function applyDoc(trx: Db, env: EnvScope["environment"], doc: PolicyDoc): Promise<Change[]> {
    const rulesBefore = await listRuleKeys(trx, env.id);
    const before = await readPolicyRows(trx, env.id);
    const records: Change[] = [];
    const keepResource = (key: string, builtIn: number) => builtIn === 1 || doc.resources[key] !== undefined;
    const goneResources = before.resources.filter((r) => !keepResource(r.key, r.built_in));
    const goneRoles = before.roles.filter((r) => r.resource_id === null && doc.roles[r.key] === undefined);
    const wanted = (key: string, type: string) =>
      (type === "resourceset" ? doc.resource_sets : doc.user_sets)[key] !== undefined;
    const goneSets = before.conditionSets.filter((s) => !wanted(s.key, s.type));
    // Tuples of relations that go while both their resources stay: the PDP names tuples by relation key.
    const resourceKey = new Map(before.resources.map((r) => [r.id, r.key]));
    const goneRelations = before.relations.filter((rel) => {
      const object = doc.resources[resourceKey.get(rel.object_resource_id) ?? ""];
      const subject = resourceKey.get(rel.subject_resource_id) ?? "";
      if (!object || !doc.resources[subject]) return false;
      return object.relations[rel.key]?.subject !== subject;
    });
    for (const tuple of await tuplesUsingRelations(
      trx,
      env.id,
      goneRelations.map((r) => r.id),
    )) {
      records.push({ kind: "relationship_tuple", op: "delete", data: tuple });
    }
    for (const r of goneResources) records.push({ kind: "resource", op: "delete", data: { key: r.key } });
    for (const r of goneRoles) records.push({ kind: "role", op: "delete", data: { key: r.key } });
    for (const s of goneSets) records.push({ kind: "condition_set", op: "delete", data: { key: s.key } });
    await deleteByIds(
      trx,
      env.id,
      "condition_sets",
      goneSets.map((s) => s.id),
    );
    await deleteByIds(
      trx,
      env.id,
      "roles",
      goneRoles.map((r) => r.id),
    );
    await deleteByIds(
      trx,
      env.id,
      "resources",
      goneResources.map((r) => r.id),
    );
    const target = await readPolicyRows(trx, env.id);
    const at = now();
    const plan = planCopy({
      source: rowsFromPolicy(doc, target, env, at),
      target,
      targetEnv: env,
      scope: {},
      strategy: "overwrite",
      at,
    });
    await applyPlan(trx, dialect, env.id, plan);
    // The planner adds missing set rules; the ones the document lacks go here.
    const wantedRules = new Set(
      doc.set_rules.map((r) => `${r.user_set}\u0000${r.permission}\u0000${r.resource_set}`),
    );
    const after = await readPolicyRows(trx, env.id);
    const setKey = new Map(after.conditionSets.map((s) => [s.id, s.key]));
    const actionOf = new Map(after.actions.map((a) => [a.id, a]));
    const afterResourceKey = new Map(after.resources.map((r) => [r.id, r.key]));
    const goneRules = after.rules.filter((rule) => {
      const action = actionOf.get(rule.action_id);
      const permission = `${afterResourceKey.get(action?.resource_id ?? "")}:${action?.key}`;
      return !wantedRules.has(
        `${setKey.get(rule.user_set_id)}\u0000${permission}\u0000${setKey.get(rule.resource_set_id)}`,
      );
    });
    await deleteByIds(
      trx,
      env.id,
      "condition_set_rules",
      goneRules.map((r) => r.id),
    );
    records.push(...(await engineRecords(trx, env.id, rulesBefore)));
    return records;
  }

  /**
   * The schema's changes and then the facts section's, in the caller's transaction: every change with the PDP's
   * records for them, which the caller appends as one revision (or rolls back, for a plan).
   */
  async function applyAll(trx: Db, env: EnvScope["environment"], doc: PolicyDoc, facts: ReadFactsDoc) {
    const changes = diffPolicies(policyFromRows(await readPolicyRows(trx, env.id)), doc);
    const records = changes.length > 0 ? await applyDoc(trx, env, doc) : [];
    if (facts) changes.push(...(await writeFactsDoc(trx, env, facts, records)));
    return { changes, records };
  }

  return {
    async export(
      { environment }: EnvScope,
      withFacts = false,
    ): Promise<{ revision: number; policy: string }> {
      const { revision, rows, facts } = await readCurrent(environment.id, withFacts);
      const section = facts && canonicalFacts(facts);
      return { revision, policy: toYaml(policyFromRows(rows), section ? { facts: section } : {}) };
    },

    plan: ({ environment }: EnvScope, text: string): Promise<PolicyPlan> => {
      const doc = parsePolicy(text);
      const facts = parseFacts(text);
      return facts ? planWithFacts(environment, doc, facts) : planOf(environment.id, doc);
    },

    /**
     * Applies the file when the environment is still at `revision` (the plan's): 409 otherwise, nothing written.
     * With `replan`, a stale plan is made again against the environment as it is and applied (`replanned`).
     * A plan without changes writes nothing and keeps the revision.
     */
    async apply({ environment }: EnvScope, text: string, revision: number, replan = false) {
      const doc = parsePolicy(text);
      const facts = parseFacts(text);
      try {
        return await db.transaction().execute(async (trx) => {
          const current = await lockedRevision(trx, environment.id);
          const replanned = current !== revision;
          if (replanned && !replan) {
            throw new AppError(
              "CONFLICT",
              `the environment changed since the plan (plan at revision ${revision}, now ${current}); plan again and apply the new plan`,
              { plan_revision: revision, current_revision: current },
            );
          }
          const { changes, records } = await applyAll(trx, environment, doc, facts);
          const answer = { ...(replanned && { replanned }), changes, summary: summaryOf(changes) };
          if (records.length === 0) return { revision: current, ...answer };
          return { revision: await appendChanges(trx, environment.id, records), ...answer };
        });
      } catch (e) {
        if (isUniqueViolation(e)) {
          throw new AppError(
            "CONFLICT",
            "the environment changed while applying; nothing was applied, plan again",
          );
        }
        throw e;
      }
    },
  };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
