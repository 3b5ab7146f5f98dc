import type { Insertable, Kysely } from "kysely";
import type { ApiLogTable, Database } from "../db/types.ts";

/** The API log's writes, by its batch writer (api-log-writer.ts); the history module reads the table. */

export const insertEvents = (db: Kysely<Database>, rows: Insertable<ApiLogTable>[]) =>
  db.insertInto("api_log").values(rows).execute();

/** Deletes records older than `cutoff` in chunks, so neither database holds a long write lock. */
export async function purgeBefore(db: Kysely<Database>, cutoff: string, chunk = 5000): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db
      .deleteFrom("api_log")
      .where("id", "in", (eb) =>
        eb.selectFrom("api_log").select("id").where("timestamp", "<", cutoff).limit(chunk),
      )
      .executeTakeFirst();
    const deleted = Number(result.numDeletedRows);
    total += deleted;
    if (deleted < chunk) return total;
  }
}
