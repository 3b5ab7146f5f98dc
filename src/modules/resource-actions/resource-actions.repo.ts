import type { Db } from "../../db/db.ts";
import type { ActionRow } from "../../domain/schema/schema.repo.ts";

export const listActionsPage = (
  db: Db,
  envId: string,
  resourceId: string,
  offset: number,
  limit: number,
): Promise<ActionRow[]> =>
  db
    .selectFrom("resource_actions")
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .orderBy("created_at")
    .orderBy("key")
    .offset(offset)
    .limit(limit)
    .execute();
