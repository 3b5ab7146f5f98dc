import { PostgresAdapter, type Kysely, type Transaction } from "kysely";
import type { Database } from "./types.ts";

/** A connection or a transaction: what every repository and domain function takes. */
export type Db = Kysely<Database> | Transaction<Database>;

/** Whether `db` talks to PostgreSQL: Kysely's transactions do not say their dialect; the adapter does. */
export const isPostgres = (db: Db): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
