import type { Kysely } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";

import { notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJsonObject } from "../../lib/json.ts";
import type { PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { resourceWrite } from "../../domain/schema/schema.changes.ts";
import type { ActionGroupRow, ResourceRow } from "../../domain/schema/schema.repo.ts";
import type { ResourcePath } from "../../domain/schema/schema.schemas.ts";
import {
  insertUnique,
  requireResource,
  resolveResourceActions,
  resourceScopedRead,
  scopeColumns,
} from "../../domain/schema/schema-rules.ts";
import {
  actionGroupMembers,
  deleteActionGroup,
  findActionGroup,
  insertActionGroup,
  replaceActionGroupMembers,
  updateActionGroup,
} from "./action-groups.repo.ts";
import type {
  ActionGroupPath,
  ResourceActionGroupCreate,
  ResourceActionGroupRead,
  ResourceActionGroupUpdate,
} from "./action-groups.schemas.ts";
import { pageOfResource } from "../../db/pages.ts";
import { namedColumns, namedPatch } from "../../lib/patch.ts";

const actionGroupRead = (row: ActionGroupRow, actions: string[]): ResourceActionGroupRead => ({
  id: row.id,
  key: row.key,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  ...(row.attributes !== null && { attributes: fromJsonObject(row.attributes) }),
  actions,
  ...resourceScopedRead(row),
});

export function createActionGroupsService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  async function requireGroup(db: Db, envId: string, resource: ResourceRow, ref: string) {
    const row = await findActionGroup(db, envId, resource.id, ref);
    if (!row) throw notFound("action group", `${resource.key}:${ref}`);
    return row;
  }

  /** The ids of the resource's actions named in the body's `actions`. */
  const actionIdsOf = (db: Db, envId: string, resource: ResourceRow, actions: string[]) =>
    resolveResourceActions(db, envId, resource, actions, ["body", "actions"]);

  async function read(db: Db, envId: string, row: ActionGroupRow): Promise<ResourceActionGroupRead> {
    const members = await actionGroupMembers(db, envId, [row.id]);
    return actionGroupRead(row, members.get(row.id) ?? []);
  }

  return {
    async list(
      { environment }: EnvScope,
      path: ResourcePath,
      page: PageRequest,
    ): Promise<ResourceActionGroupRead[]> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      const rows = await pageOfResource(db, "action_groups", environment.id, resource.id, page);
      const members = await actionGroupMembers(
        db,
        environment.id,
        rows.map((r) => r.id),
      );
      return rows.map((r) => actionGroupRead(r, members.get(r.id) ?? []));
    },

    async get({ environment }: EnvScope, path: ActionGroupPath): Promise<ResourceActionGroupRead> {
      const resource = await requireResource(db, environment.id, path.resource_id);
      return read(db, environment.id, await requireGroup(db, environment.id, resource, path.action_group_id));
    },

    async create(
      env: EnvScope,
      path: ResourcePath,
      input: ResourceActionGroupCreate,
    ): Promise<ResourceActionGroupRead> {
      const envId = env.environment.id;
      return resourceWrite(db, envId, path.resource_id, async (trx, resource) => {
        const actionIds = await actionIdsOf(trx, envId, resource, input.actions ?? []);
        const at = now();
        const row: ActionGroupRow = {
          id: newId(),
          ...scopeColumns(env),
          resource_id: resource.id,
          ...namedColumns(input, at),
        };
        await insertUnique("action group", `${resource.key}:${input.key}`, () => insertActionGroup(trx, row));
        await replaceActionGroupMembers(trx, envId, row.id, actionIds);
        return read(trx, envId, row);
      });
    },

    async update(
      env: EnvScope,
      path: ActionGroupPath,
      input: ResourceActionGroupUpdate,
    ): Promise<ResourceActionGroupRead> {
      const envId = env.environment.id;
      return resourceWrite(db, envId, path.resource_id, async (trx, resource) => {
        const group = await requireGroup(trx, envId, resource, path.action_group_id);
        if (input.actions !== undefined) {
          await replaceActionGroupMembers(
            trx,
            envId,
            group.id,
            await actionIdsOf(trx, envId, resource, input.actions),
          );
        }
        const row = await updateActionGroup(trx, group.id, namedPatch(input));
        return read(trx, envId, row);
      });
    },

    async remove(env: EnvScope, path: ActionGroupPath): Promise<void> {
      const envId = env.environment.id;
      await resourceWrite(db, envId, path.resource_id, async (trx, resource) => {
        const group = await requireGroup(trx, envId, resource, path.action_group_id);
        await deleteActionGroup(trx, group.id);
      });
    },
  };
}

export type ActionGroupsService = ReturnType<typeof createActionGroupsService>;
