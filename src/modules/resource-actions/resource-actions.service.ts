import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import type { PageRequest } from "../../lib/pagination.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { resourceWrite } from "../../domain/schema/schema.changes.ts";
import { findAction, type ActionRow, type ResourceRow } from "../../domain/schema/schema.repo.ts";
import { requireResource } from "../../domain/schema/schema-rules.ts";
import { deleteActions, updateAction } from "../../domain/schema/resource-actions.repo.ts";
import type { ResourcePath } from "../../domain/schema/schema.schemas.ts";
import type {
  ActionPath,
  ResourceActionCreate,
  ResourceActionRead,
  ResourceActionUpdate,
} from "./resource-actions.schemas.ts";
import { actionRead, createActionRecord } from "../../domain/schema/resource-action-records.ts";
import { pageOfResource } from "../../db/pages.ts";
import { namedPatch } from "../../lib/patch.ts";
export function createResourceActionsService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function requireAction(
    trx: Db,
    envId: string,
    resource: ResourceRow,
    ref: string,
  ): Promise<ActionRow> {
    const row = await findAction(trx, envId, resource.id, ref);
    if (!row) throw notFound("action", `${resource.key}:${ref}`);
    return row;
  }

  return {
    async list(
      { environment }: EnvScope,
      path: ResourcePath,
      page: PageRequest,
    ): Promise<ResourceActionRead[]> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      const rows = await pageOfResource(db, "resource_actions", environment.id, resource.id, page);
      return rows.map((r) => actionRead(r, resource.key));
    },

    async get({ environment }: EnvScope, path: ActionPath): Promise<ResourceActionRead> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      return actionRead(await requireAction(db, environment.id, resource, path.action_id), resource.key);
    },

    async create(
      env: EnvScope,
      path: ResourcePath,
      input: ResourceActionCreate,
    ): Promise<ResourceActionRead> {
      return resourceWrite(db, env.environment.id, path.resource_id, async (trx, resource) => {
        const row = await createActionRecord(trx, env, resource, input.key, input);
        return actionRead(row, resource.key);
      });
    },

    async update(env: EnvScope, path: ActionPath, input: ResourceActionUpdate): Promise<ResourceActionRead> {
      return resourceWrite(db, env.environment.id, path.resource_id, async (trx, resource) => {
        const action = await requireAction(trx, env.environment.id, resource, path.action_id);
        const row = await updateAction(trx, action.id, namedPatch(input));
        return actionRead(row, resource.key);
      });
    },

    /** Removes the action with the permissions granting it, its place in action groups and set rules on it. */
    async remove(env: EnvScope, path: ActionPath): Promise<void> {
      await resourceWrite(db, env.environment.id, path.resource_id, async (trx, resource, changes) => {
        const action = await requireAction(trx, env.environment.id, resource, path.action_id);
        await changes.actionsRemoved([action.id]);
        await deleteActions(trx, [action.id]);
      });
    },
  };
}

export type ResourceActionsService = ReturnType<typeof createResourceActionsService>;
