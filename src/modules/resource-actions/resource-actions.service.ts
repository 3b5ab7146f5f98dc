import type { Kysely } from "kysely";
import type { Db } from "../../changes/feed.ts";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope, ScopeService } from "../../domain/path-scope.ts";
import { schemaWrite, type SchemaChanges } from "../../domain/schema/schema.changes.ts";
import {
  findAction,
  listActions,
  type ActionRow,
  type ResourceRow,
} from "../../domain/schema/schema.repo.ts";
import {
  assertKeys,
  insertUnique,
  requireResource,
  scopeColumns,
  writableResource,
} from "../../domain/schema/schema-rules.ts";
import { deleteActions, insertAction, listActionsPage, updateAction } from "./resource-actions.repo.ts";
import type { EnvPath, ResourcePath } from "../../domain/schema/schema.schemas.ts";
import type {
  ActionBlockEditable,
  ActionPath,
  ResourceActionCreate,
  ResourceActionRead,
  ResourceActionUpdate,
} from "./resource-actions.schemas.ts";

export const actionRead = (row: ActionRow, resourceKey: string): ResourceActionRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  ...(row.attributes !== null && { attributes: fromJsonObject(row.attributes) }),
  permission_name: `${resourceKey}:${row.key}`,
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  resource_id: row.resource_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

async function createActionRecord(
  trx: Db,
  scope: EnvScope,
  resource: ResourceRow,
  key: string,
  block: ActionBlockEditable,
  at = now(),
): Promise<ActionRow> {
  const row: ActionRow = {
    id: newId(),
    ...scopeColumns(scope),
    resource_id: resource.id,
    key,
    name: block.name ?? key,
    description: block.description ?? null,
    attributes: toJson(block.attributes),
    created_at: at,
    updated_at: at,
  };
  await insertUnique("action", `${resource.key}:${key}`, () => insertAction(trx, row));
  return row;
}

/**
 * Makes the resource's actions exactly `actions` (a resource body's block): kept keys keep their ids, so roles
 * keep their permissions on them; missing keys are deleted with the permissions on them.
 */
export async function replaceActions(
  trx: Db,
  scope: EnvScope,
  changes: SchemaChanges,
  resource: ResourceRow,
  actions: Record<string, ActionBlockEditable>,
): Promise<void> {
  assertKeys(actions, "action", ["body", "actions"]);
  const at = now();
  const existing = new Map(
    (await listActions(trx, scope.environment.id, resource.id)).map((a) => [a.key, a]),
  );
  const removed = [...existing.values()].filter((a) => !Object.hasOwn(actions, a.key)).map((a) => a.id);
  await changes.actionsRemoved(removed);
  await deleteActions(trx, removed);
  for (const [key, block] of Object.entries(actions)) {
    const current = existing.get(key);
    if (!current) {
      await createActionRecord(trx, scope, resource, key, block, at);
    } else {
      await updateAction(trx, current.id, {
        name: block.name ?? key,
        description: block.description ?? null,
        attributes: toJson(block.attributes),
        updated_at: at,
      });
    }
  }
  changes.resource(resource.id);
}

export function createResourceActionsService(deps: { db: Kysely<Database>; scope: ScopeService }) {
  const { db, scope } = deps;
  const envScope = (principal: Principal, path: EnvPath, access: "read" | "write") =>
    scope.environment(principal, path.proj_id, path.env_id, { access });

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
    async list(principal: Principal, path: ResourcePath, page: PageRequest): Promise<ResourceActionRead[]> {
      const { environment } = await envScope(principal, path, "read");
      const resource = await requireResource(db, environment.id, path.resource_id);
      const rows = await listActionsPage(db, environment.id, resource.id, offsetOf(page), page.perPage);
      return rows.map((r) => actionRead(r, resource.key));
    },

    async get(principal: Principal, path: ActionPath): Promise<ResourceActionRead> {
      const { environment } = await envScope(principal, path, "read");
      const resource = await requireResource(db, environment.id, path.resource_id);
      return actionRead(await requireAction(db, environment.id, resource, path.action_id), resource.key);
    },

    async create(
      principal: Principal,
      path: ResourcePath,
      input: ResourceActionCreate,
    ): Promise<ResourceActionRead> {
      const env = await envScope(principal, path, "write");
      return schemaWrite(db, env.environment.id, async (trx, changes) => {
        const resource = await writableResource(trx, env.environment.id, path.resource_id);
        const row = await createActionRecord(trx, env, resource, input.key, input);
        changes.resource(resource.id);
        return actionRead(row, resource.key);
      });
    },

    async update(
      principal: Principal,
      path: ActionPath,
      input: ResourceActionUpdate,
    ): Promise<ResourceActionRead> {
      const env = await envScope(principal, path, "write");
      return schemaWrite(db, env.environment.id, async (trx, changes) => {
        const resource = await writableResource(trx, env.environment.id, path.resource_id);
        const action = await requireAction(trx, env.environment.id, resource, path.action_id);
        const row = await updateAction(trx, action.id, {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.description !== undefined && { description: input.description }),
          ...(input.attributes !== undefined && { attributes: toJson(input.attributes) }),
          updated_at: now(),
        });
        changes.resource(resource.id);
        return actionRead(row, resource.key);
      });
    },

    /** Removes the action with the permissions granting it, its place in action groups and set rules on it. */
    async remove(principal: Principal, path: ActionPath): Promise<void> {
      const env = await envScope(principal, path, "write");
      await schemaWrite(db, env.environment.id, async (trx, changes) => {
        const resource = await writableResource(trx, env.environment.id, path.resource_id);
        const action = await requireAction(trx, env.environment.id, resource, path.action_id);
        await changes.actionsRemoved([action.id]);
        await deleteActions(trx, [action.id]);
        changes.resource(resource.id);
      });
    },
  };
}

export type ResourceActionsService = ReturnType<typeof createResourceActionsService>;
