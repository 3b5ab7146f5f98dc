import type { Db } from "../../db/db.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../path-scope.ts";
import type { SchemaChanges } from "./schema.changes.ts";
import { listActions, type ActionRow, type ResourceRow } from "./schema.repo.ts";
import { assertKeys, insertUnique, resourceScopedRead, scopeColumns } from "./schema-rules.ts";
import { deleteActions, insertAction, updateAction } from "./resource-actions.repo.ts";
import type { ActionBlockEditable, ResourceActionRead } from "./schema.schemas.ts";

/**
 * Resource action records inside the caller's transaction, shared by resource-actions and resources (a
 * resource's actions are written with it).
 */

export const actionRead = (row: ActionRow, resourceKey: string): ResourceActionRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  ...(row.attributes !== null && { attributes: fromJsonObject(row.attributes) }),
  permission_name: `${resourceKey}:${row.key}`,
  ...resourceScopedRead(row),
});

export async function createActionRecord(
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
