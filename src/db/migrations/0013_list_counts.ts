import { PostgresAdapter, sql, type Kysely } from "kysely";

/** The lists whose unfiltered total_count is read from list_counts instead of counting the table. */
export const COUNTED_LISTS = [
  "users",
  "tenants",
  "resource_instances",
  "relationship_tuples",
  "role_assignments",
] as const;

/**
 * One row per environment with the number of rows of each counted list, kept exact by triggers in the same
 * transaction as every insert and delete, whatever the write path (single writes, bulk, environment copy,
 * organization import, cascades from a deleted tenant, user, resource or instance). The environment's row is
 * created by a trigger on environments, so the counting triggers only update. On PostgreSQL the triggers run per
 * statement over the transition table (one update per statement, not per row); SQLite has row triggers only.
 * Deleting the environment deletes its row by cascade. `version` grows with every insert or delete of any counted
 * list: what a cache of page boundaries (list-pages.repo.ts) checks to know that no row moved since.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable("list_counts")
    .addColumn("environment_id", "text", (c) =>
      c.primaryKey().references("environments.id").onDelete("cascade"),
    )
    .$call((t) => {
      for (const list of COUNTED_LISTS) t = t.addColumn(list, "bigint", (c) => c.notNull().defaultTo(0));
      return t.addColumn("version", "bigint", (c) => c.notNull().defaultTo(0));
    })
    .execute();
  if (postgres) await postgresTriggers(db);
  else await sqliteTriggers(db);
  // Backfill: a row for every environment, with its counts.
  await sql`insert into list_counts (environment_id) select id from environments`.execute(db);
  for (const list of COUNTED_LISTS) {
    const column = sql.ref(list);
    await sql`update list_counts set ${column} = (select count(*) from ${sql.table(list)} t
      where t.environment_id = list_counts.environment_id)`.execute(db);
  }
  // The role-assignment list leaves out expired assignments the purge has not deleted yet; this finds them.
  await db.schema
    .createIndex("role_assignments_env_expires_idx")
    .on("role_assignments")
    .columns(["environment_id", "expires_at"])
    .where(sql.ref("expires_at"), "is not", null)
    .execute();
}

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create trigger list_counts_environment after insert on environments begin
    insert into list_counts (environment_id) values (new.id); end`.execute(db);
  for (const list of COUNTED_LISTS) {
    const column = sql.ref(list);
    await sql`create trigger ${sql.raw(`${list}_count_insert`)} after insert on ${sql.table(list)} begin
      update list_counts set ${column} = ${column} + 1, version = version + 1 where environment_id = new.environment_id; end`.execute(
      db,
    );
    await sql`create trigger ${sql.raw(`${list}_count_delete`)} after delete on ${sql.table(list)} begin
      update list_counts set ${column} = ${column} - 1, version = version + 1 where environment_id = old.environment_id; end`.execute(
      db,
    );
  }
}

async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql`create function list_counts_environment() returns trigger language plpgsql as $$
    begin
      insert into list_counts (environment_id) values (new.id);
      return null;
    end $$`.execute(db);
  await sql`create trigger list_counts_environment after insert on environments
    for each row execute function list_counts_environment()`.execute(db);
  // TG_ARGV[0] is the column (one of COUNTED_LISTS, fixed here), so the dynamic SQL takes no user input.
  await sql`create function list_counts_change() returns trigger language plpgsql as $$
    begin
      execute format('update list_counts c set %1$I = c.%1$I %2$s d.n, version = c.version + 1
        from (select environment_id, count(*) as n from changed_rows group by environment_id) d
        where c.environment_id = d.environment_id', tg_argv[0], case when tg_op = 'DELETE' then '-' else '+' end);
      return null;
    end $$`.execute(db);
  for (const list of COUNTED_LISTS) {
    const table = sql.table(list);
    const arg = sql.lit(list);
    await sql`create trigger ${sql.raw(`${list}_count_insert`)} after insert on ${table}
      referencing new table as changed_rows for each statement execute function list_counts_change(${arg})`.execute(
      db,
    );
    await sql`create trigger ${sql.raw(`${list}_count_delete`)} after delete on ${table}
      referencing old table as changed_rows for each statement execute function list_counts_change(${arg})`.execute(
      db,
    );
  }
}
