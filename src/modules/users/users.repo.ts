import type { Insertable } from "kysely";
import type { Db } from "../../db/db.ts";
import type { UsersTable } from "../../db/types.ts";
import { inChunks, type UserRow } from "../../domain/facts/facts.repo.ts";

/**
 * Inserts the users whose keys are free in the environment and returns the keys it inserted. A key that another
 * transaction holds uncommitted waits for it: once it commits the key is taken, and a new read sees its user.
 */
export async function insertUsers(db: Db, rows: Insertable<UsersTable>[]): Promise<Set<string>> {
  const inserted = await inChunks<Insertable<UsersTable>, { key: string }>(rows, (slice) =>
    db
      .insertInto("users")
      .values(slice)
      .onConflict((oc) => oc.columns(["environment_id", "key"]).doNothing())
      .returning("key")
      .execute(),
  );
  return new Set(inserted.map((r) => r.key));
}

/** Role assignments go with the user (foreign keys cascade). */
export const deleteUsers = (db: Db, envId: string, ids: string[]) =>
  inChunks(ids, (slice) =>
    db.deleteFrom("users").where("environment_id", "=", envId).where("id", "in", slice).execute(),
  );

/** Users by key, in one indexed read. */
export const usersByKeys = (db: Db, envId: string, keys: string[]): Promise<UserRow[]> =>
  inChunks<string, UserRow>(keys, (slice) =>
    db
      .selectFrom("users")
      .selectAll()
      .where("environment_id", "=", envId)
      .where("key", "in", slice)
      .execute(),
  );
