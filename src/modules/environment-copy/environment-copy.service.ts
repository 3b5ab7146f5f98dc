import type { Kysely } from "kysely";
import { appendChanges } from "../../changes/feed.ts";
import { enqueueEvent } from "../../changes/events.ts";
import type { Db } from "../../db/db.ts";
import type { Dialect } from "../../db/store.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { Database } from "../../db/types.ts";

import { AppError, invalid } from "../../lib/errors.ts";
import { now } from "../../lib/time.ts";
import type { Change } from "../../pdp/engine/types.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { findProject } from "../../domain/project-records.ts";
import { proxyConfigChange, proxyConfigRows, storedRules } from "../../domain/proxy-config-records.ts";
import { newId } from "../../lib/ids.ts";
import type { EnvironmentCreate, EnvironmentRead } from "../environments/environments.schemas.ts";
import {
  createEnvironmentRecords,
  environmentRead,
  findEnvironment,
  findEnvironmentById,
  type EnvironmentRow,
} from "../../domain/environment-records.ts";
import type { TaskHandler } from "../../tasks/task-types.ts";
import { taskRecord, type TaskRecord, type TasksService } from "../../tasks/tasks.service.ts";
import type { TaskRow } from "../../tasks/tasks.repo.ts";
import {
  listRuleKeys,
  readPolicyRows,
  type PolicyRows,
  insertProxyConfigRow,
  replaceProxyConfigRow,
} from "./environment-copy.repo.ts";
import { planCopy, type CopyScope } from "./environment-copy.plan.ts";
import { applyPlan, engineRecords } from "./environment-copy.apply.ts";
import type { EnvironmentCopy } from "./environment-copy.schemas.ts";

/** What an environment copy task stores: the request, validated, with its defaults. */
export interface CopyParams {
  target_env: { new: EnvironmentCreate } | { existing: string };
  conflict_strategy: "fail" | "overwrite";
  scope: CopyScope;
}

declare module "../../tasks/task-types.ts" {
  interface TaskTypes {
    environment_copy: { params: CopyParams; result: EnvironmentRead };
  }
}

export const COPY_TASK = "environment_copy";

export interface CopyRun {
  signal?: AbortSignal;
  progress?: (percent: number) => Promise<void>;
  /** Records the outcome in the copy's own transaction (the task runner's `succeedWithin`). */
  succeedWithin?: (trx: Db, result: EnvironmentRead) => Promise<void>;
}

/**
 * Every proxy config of the source (their mapping rules name resources and actions by key): a new one in the
 * target, or one with the same key replaced (`overwrite`) or a conflict (`fail`, nothing is written).
 */
async function copyProxyConfigs(
  trx: Db,
  sourceEnvId: string,
  target: EnvironmentRow,
  strategy: CopyParams["conflict_strategy"],
): Promise<Change[]> {
  const existing = new Map((await proxyConfigRows(trx, target.id)).map((r) => [r.key, r]));
  const records: Change[] = [];
  const at = now();
  for (const row of await proxyConfigRows(trx, sourceEnvId)) {
    const fields = {
      name: row.name,
      secret: row.secret,
      auth_mechanism: row.auth_mechanism,
      mapping_rules: row.mapping_rules,
      updated_at: at,
    };
    const same = existing.get(row.key);
    if (same && strategy === "fail") {
      throw new AppError(
        "DUPLICATE_ENTITY",
        `the target environment already has proxy config '${row.key}'; nothing was copied (conflict_strategy 'overwrite' replaces it)`,
        { conflicts: { proxy_configs: [row.key] } },
      );
    }
    if (same) await replaceProxyConfigRow(trx, target.id, same.id, fields);
    else {
      await insertProxyConfigRow(trx, {
        id: newId(),
        organization_id: target.organization_id,
        project_id: target.project_id,
        environment_id: target.id,
        key: row.key,
        created_at: at,
        ...fields,
      });
    }
    records.push(proxyConfigChange(row.key, storedRules(row.mapping_rules)));
  }
  return records;
}

export function createEnvironmentCopyService(deps: {
  db: Kysely<Database>;
  dialect: Dialect;
  box: SecretBox;
  tasks: TasksService;
}) {
  const { db, dialect, box, tasks } = deps;

  /** A consistent read of the source: one snapshot, outside the write (PostgreSQL: repeatable read). */
  const readSource = (envId: string): Promise<PolicyRows> => {
    const tx =
      dialect === "postgres" ? db.transaction().setIsolationLevel("repeatable read") : db.transaction();
    return tx.execute((trx) => readPolicyRows(trx, envId));
  };

  async function resolveTarget(
    trx: Db,
    source: EnvironmentRow,
    target: CopyParams["target_env"],
  ): Promise<{ row: EnvironmentRow; created: boolean }> {
    if ("new" in target) {
      const project = await findProject(trx, source.organization_id, source.project_id);
      if (!project) throw new AppError("NOT_FOUND", "the source environment's project was not found");
      return { row: await createEnvironmentRecords(trx, box, project, target.new), created: true };
    }
    const row = await findEnvironment(trx, source.project_id, target.existing);
    if (!row) {
      throw new AppError(
        "NOT_FOUND",
        `the target environment '${target.existing}' was not found in the source environment's project`,
        { object: "environment", ref: target.existing },
      );
    }
    if (row.id === source.id)
      throw invalid("an environment cannot be copied into itself", ["body", "target_env"]);
    return { row, created: false };
  }

  /**
   * Copies the policy of `sourceEnvId` as `params` says, in one transaction: the target has the whole copy or
   * nothing of it. Facts (users, tenants other than `default`, instances, assignments, tuples) are not copied.
   */
  async function copy(sourceEnvId: string, params: CopyParams, run: CopyRun = {}): Promise<EnvironmentRead> {
    const { signal, progress } = run;
    const source = await findEnvironmentById(db, sourceEnvId);
    if (!source) {
      throw new AppError(
        "NOT_FOUND",
        "the source environment of the copy was not found; it may have been deleted",
        {
          object: "environment",
          ref: sourceEnvId,
        },
      );
    }
    const sourceRows = await readSource(source.id);
    await progress?.(10);
    signal?.throwIfAborted();
    try {
      return await db.transaction().execute(async (trx) => {
        const target = await resolveTarget(trx, source, params.target_env);
        const targetRows = await readPolicyRows(trx, target.row.id);
        const plan = planCopy({
          source: sourceRows,
          target: targetRows,
          targetEnv: target.row,
          scope: params.scope,
          strategy: params.conflict_strategy,
          at: now(),
        });
        const { conflicts } = plan;
        if (
          params.conflict_strategy === "fail" &&
          conflicts.resources.length + conflicts.roles.length + conflicts.condition_sets.length > 0
        ) {
          const names = [
            ...conflicts.resources.map((k) => `resource '${k}'`),
            ...conflicts.roles.map((k) => `role '${k}'`),
            ...conflicts.condition_sets.map((k) => `condition set '${k}'`),
          ];
          throw new AppError(
            "DUPLICATE_ENTITY",
            `the target environment already has ${names.slice(0, 5).join(", ")}${names.length > 5 ? ` and ${names.length - 5} more` : ""}; ` +
              "nothing was copied (conflict_strategy 'overwrite' replaces them)",
            { conflicts },
          );
        }
        const rulesBefore = target.created ? [] : await listRuleKeys(trx, target.row.id);
        await applyPlan(trx, dialect, target.row.id, plan, signal);
        signal?.throwIfAborted();
        const proxyRecords = await copyProxyConfigs(trx, source.id, target.row, params.conflict_strategy);
        await appendChanges(trx, target.row.id, [
          ...(await engineRecords(trx, target.row.id, rulesBefore)),
          ...proxyRecords,
        ]);
        // PostgreSQL: another connection can note the progress while this transaction is open (SQLite has one).
        if (dialect === "postgres") await progress?.(90);
        await enqueueEvent(
          trx,
          {
            organization_id: target.row.organization_id,
            project_id: target.row.project_id,
            environment_id: target.row.id,
          },
          "environment.copied",
          { source_environment_id: source.id, target_created: target.created, scope: params.scope },
        );
        const row = await findEnvironmentById(trx, target.row.id);
        const result = environmentRead(row ?? target.row);
        signal?.throwIfAborted();
        await run.succeedWithin?.(trx, result);
        return result;
      });
    } catch (e) {
      if (isUniqueViolation(e)) {
        throw new AppError(
          "DUPLICATE_ENTITY",
          "an object with the same key was created in the target environment while copying; nothing was copied",
        );
      }
      throw e;
    }
  }

  /** Request-time checks: the body's shape beyond its schema, and the defaults. */
  function validated(body: EnvironmentCopy, source: EnvironmentRow): CopyParams {
    const target = body.target_env;
    if ((target.new === undefined) === (target.existing === undefined)) {
      throw invalid("target_env needs exactly one of 'new' and 'existing'", ["body", "target_env"]);
    }
    if (
      target.existing !== undefined &&
      (target.existing === source.key || target.existing.toLowerCase() === source.id)
    ) {
      throw invalid("an environment cannot be copied into itself", ["body", "target_env", "existing"]);
    }
    const scope = body.scope ?? {};
    return {
      target_env: target.new ? { new: target.new } : { existing: target.existing ?? "" },
      conflict_strategy: body.conflict_strategy ?? "fail",
      scope: {
        resources: scope.resources,
        roles: scope.roles,
        user_sets: scope.user_sets,
        resource_sets: scope.resource_sets,
      },
    };
  }

  const handler: TaskHandler<CopyParams, EnvironmentRead> = (context) =>
    copy(context.task.environment_id, context.params, {
      signal: context.signal,
      progress: (percent) => context.progress(percent),
      succeedWithin: (trx, result) => context.succeedWithin(trx, result),
    });

  return {
    handler,
    copyEnvironment: copy,

    async copy({ environment }: EnvScope, body: EnvironmentCopy) {
      return copy(environment.id, validated(body, environment));
    },

    /** 202 with the new task; 200 with the finished task when it finishes within `wait` seconds. */
    async copyAsync(
      { organizationId, project, environment }: EnvScope,
      body: EnvironmentCopy,
      wait: number,
    ): Promise<{ finished: boolean; record: TaskRecord<EnvironmentRead> }> {
      const params = validated(body, environment);
      let row: TaskRow = await tasks.submit({
        type: COPY_TASK,
        params,
        organizationId,
        projectId: project.id,
        environmentId: environment.id,
      });
      if (wait > 0) row = await tasks.wait(environment.id, row.id, COPY_TASK, wait);
      return { finished: row.status !== "processing", record: taskRecord<EnvironmentRead>(row) };
    },

    /** The task as it is, or (with `wait`) as soon as it finishes. Only under its source environment. */
    async result(
      { environment }: EnvScope,
      taskId: string,
      wait: number,
    ): Promise<TaskRecord<EnvironmentRead>> {
      const row = await tasks.wait(environment.id, taskId, COPY_TASK, wait);
      return taskRecord<EnvironmentRead>(row);
    },
  };
}

export type EnvironmentCopyService = ReturnType<typeof createEnvironmentCopyService>;
