import { PostgresAdapter, sql, type Kysely } from "kysely";

/** The references of role_assignments: its column, the table it names, and the name of the foreign key it had. */
const REFERENCES = [
  { column: "environment_id", table: "environments" },
  { column: "user_id", table: "users" },
  { column: "role_id", table: "roles" },
  { column: "tenant_id", table: "tenants" },
  { column: "resource_instance_id", table: "resource_instances" },
] as const;

/**
 * PostgreSQL only: role_assignments' foreign keys become statement-level triggers (issue 42). PostgreSQL 15 checks
 * a foreign key with a row-level trigger, one query per inserted row and key, whatever the statement: an import's
 * insert of 1,000 rows ran 5,000 of them. The triggers here do what the five keys did, once per statement:
 *
 * - After an insert or update of role_assignments, one query over the statement's new rows looks up each distinct
 *   referenced id and locks it `FOR KEY SHARE`, as the keys' check does; a reference no lock found is missing, and
 *   the statement fails with foreign_key_violation (23503), naming the key it replaces.
 * - After a delete of a user, role, tenant, resource instance or environment, one statement deletes the
 *   assignments that named the deleted rows (the keys' `ON DELETE CASCADE`). A referenced row's id may not change
 *   while an assignment names it (the keys' `ON UPDATE NO ACTION`; ids never change).
 *
 * Concurrency (READ COMMITTED, the isolation of every write here), for an import that names user U racing a delete
 * of U:
 * - The import locked U first: the delete waits for the import's commit, then deletes U; its cascade is a new
 *   statement with a new snapshot (a plpgsql function takes one per statement), so it sees and deletes the
 *   committed assignments.
 * - The delete came first, committed or not: the import's lock waits for it; once it commits U is gone, the lock
 *   finds nothing and the import fails; if it rolls back, the lock is taken and the import goes on. An import whose
 *   rows are in but not yet checked is invisible to the delete's cascade, and its check then finds U gone.
 * Either way no assignment outlives its user: what the keys guarantee. (A cascade run under REPEATABLE READ would
 * keep its first snapshot and could miss an assignment committed meanwhile; no write here runs at that level.)
 * `test/api/assignment-references.test.ts` covers the refusal, each cascade and both orders of the race.
 *
 * SQLite keeps its foreign keys: there a check is an index lookup inside the insert, not a query.
 *
 * Both databases: the two indexes on resource_instance_id hold only instance roles. A tenant role (nearly every
 * imported assignment) has none, and its entry under NULL was two of the eleven index entries an insert wrote;
 * every query through them (a filter by instance, the cascade from a deleted instance) compares with `=` or `in`,
 * which implies not null, so a partial index serves it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, columns] of [
    ["role_assignments_instance_idx", ["resource_instance_id"]],
    ["role_assignments_env_instance_idx", ["environment_id", "resource_instance_id"]],
  ] as const) {
    await db.schema.dropIndex(name).execute();
    await db.schema
      .createIndex(name)
      .on("role_assignments")
      .columns([...columns])
      .where(sql.ref("resource_instance_id"), "is not", null)
      .execute();
  }
  if (db.getExecutor().adapter instanceof PostgresAdapter) await referenceTriggers(db);
}

async function referenceTriggers(db: Kysely<unknown>): Promise<void> {
  for (const { column } of REFERENCES) {
    await sql`alter table role_assignments drop constraint ${sql.raw(`role_assignments_${column}_fkey`)}`.execute(
      db,
    );
  }
  // One lateral lookup per distinct id (an index seek that takes the lock), the rows' ids only for the id column.
  const missing = REFERENCES.map(
    ({ column, table }) =>
      sql`select ${sql.lit(`role_assignments_${column}_fkey`)} as key, n.id from
        (select distinct ${sql.ref(column)} as id from new_rows where ${sql.ref(column)} is not null) n
        left join lateral (select 1 as found from ${sql.table(table)} r where r.id = n.id for key share) l on true
        where l.found is null`,
  );
  await sql`create function role_assignments_check_references() returns trigger language plpgsql as $$
    declare
      bad record;
    begin
      select * into bad from (${sql.join(missing, sql` union all `)}) m limit 1;
      if found then
        raise foreign_key_violation using
          message = format('insert or update on table "role_assignments" violates foreign key constraint "%s"', bad.key),
          detail = format('Key (%s) is not present.', bad.id),
          constraint = bad.key, table = 'role_assignments';
      end if;
      return null;
    end $$`.execute(db);
  for (const op of ["insert", "update"]) {
    await sql`create trigger ${sql.raw(`role_assignments_references_${op}`)} after ${sql.raw(op)} on role_assignments
      referencing new table as new_rows for each statement execute function role_assignments_check_references()`.execute(
      db,
    );
  }

  // TG_ARGV[0] is the column (one of REFERENCES, fixed here), so the dynamic SQL takes no user input.
  await sql`create function role_assignments_cascade() returns trigger language plpgsql as $$
    begin
      execute format('delete from role_assignments a using gone_rows g where a.%I = g.id', tg_argv[0]);
      return null;
    end $$`.execute(db);
  await sql`create function role_assignments_restrict_id() returns trigger language plpgsql as $$
    declare
      held boolean;
    begin
      execute format('select exists (select 1 from role_assignments where %I = $1)', tg_argv[0]) into held using old.id;
      if held then
        raise foreign_key_violation using
          message = format('update on table "%s" violates foreign key constraint "role_assignments_%s_fkey" on table "role_assignments"', tg_table_name, tg_argv[0]),
          constraint = format('role_assignments_%s_fkey', tg_argv[0]), table = tg_table_name;
      end if;
      return null;
    end $$`.execute(db);
  for (const { column, table } of REFERENCES) {
    const arg = sql.lit(column);
    await sql`create trigger ${sql.raw(`${table}_role_assignments_cascade`)} after delete on ${sql.table(table)}
      referencing old table as gone_rows for each statement execute function role_assignments_cascade(${arg})`.execute(
      db,
    );
    await sql`create trigger ${sql.raw(`${table}_role_assignments_restrict_id`)} after update of id on ${sql.table(table)}
      for each row when (old.id is distinct from new.id) execute function role_assignments_restrict_id(${arg})`.execute(
      db,
    );
  }
}
