import type { Selectable } from "kysely";
import { offsetOf, type PageRequest } from "../lib/pagination.ts";
import type { Db } from "./db.ts";
import type { Database } from "./types.ts";

/** The tables of what one resource owns: its actions, its action groups, its roles. */
type ResourceOwned = "resource_actions" | "action_groups" | "roles";

/** A page of the rows one resource owns, in creation order, then key. */
export const pageOfResource = <T extends ResourceOwned>(
  db: Db,
  table: T,
  envId: string,
  resourceId: string,
  page: PageRequest,
): Promise<Selectable<Database[T]>[]> =>
  db
    .selectFrom(table as ResourceOwned)
    .selectAll()
    .where("environment_id", "=", envId)
    .where("resource_id", "=", resourceId)
    .orderBy("created_at")
    .orderBy("key")
    .offset(offsetOf(page))
    .limit(page.perPage)
    .execute() as Promise<Selectable<Database[T]>[]>;
