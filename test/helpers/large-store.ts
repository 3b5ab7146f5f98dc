import { CompiledQuery, sql } from "kysely";
import type { TestEnv } from "./app.ts";

/** What seedLargeEnvironment put in the environment. */
export interface LargeSeed {
  /** Users `u-0` … `u-(users-1)`, in list order. */
  users: number;
  /** Tenants `t-0` … `t-(tenants-1)`; user `u-i` holds role `roleKey` in tenant `t-(i % tenants)`. */
  tenants: number;
  roleKey: string;
  /** Resource `doc` with instances `doc:d-0` … in tenant `t-(i % tenants)`; every tenth user `u-i` has role `doc#reader` on `d-(i % instances)`. */
  instances: number;
  /** Relationship tuples `doc:d-(i+1) parent doc:d-i`. */
  tuples: number;
}

/**
 * Fills an environment straight through SQL, in one statement a table (a recursive CTE on SQLite, generate_series
 * on PostgreSQL): seeding 100,000 users through the API would take minutes. Every user has a tenant role, every tenth
 * one an instance role too; users are created 1 ms apart, so the lists' order is their number. Ids are random UUIDs, as the
 * API makes them. The list counters are kept by their triggers. ANALYZE runs at the end unless told not to.
 */
export async function seedLargeEnvironment(
  e: TestEnv,
  envId: string,
  n: { users: number; tenants: number; instances: number },
  { analyze = true } = {},
): Promise<LargeSeed> {
  const db = e.store.db;
  const sqlite = e.dialect === "sqlite";
  const env = await db
    .selectFrom("environments")
    .select(["organization_id", "project_id"])
    .where("id", "=", envId)
    .executeTakeFirstOrThrow();
  const scope = sql`${env.organization_id}, ${env.project_id}, ${envId}`;
  // i from 0 to count - 1, as the rows of `series(i)`.
  const series = (count: number) =>
    sqlite
      ? sql`with recursive series(i) as (select 0 union all select i + 1 from series where i + 1 < ${sql.lit(count)})`
      : sql`with series(i) as (select generate_series(0, ${sql.lit(count - 1)}))`;
  const uuid = sqlite
    ? sql`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-8' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`
    : sql`gen_random_uuid()::text`;
  // 1 ms after 2026-01-01 per row, as the API writes timestamps.
  const at = sqlite
    ? sql`strftime('%Y-%m-%dT%H:%M:%f+00:00', 1767225600 + i / 1000.0, 'unixepoch')`
    : sql`to_char(timestamp '2026-01-01' + i * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"')`;
  const text = (prefix: string) => (sqlite ? sql`${prefix} || i` : sql`${prefix} || i::text`);
  const number = (column: string, prefix: string) =>
    sqlite
      ? sql`cast(substr(${sql.ref(column)}, ${sql.lit(prefix.length + 1)}) as integer)`
      : sql`substr(${sql.ref(column)}, ${sql.lit(prefix.length + 1)})::int`;
  // The key `prefix` + n, for an integer expression n.
  const keyOf = (prefix: string, n: ReturnType<typeof sql>) =>
    sqlite ? sql`${prefix} || (${n})` : sql`${prefix} || (${n})::text`;
  const run = (query: ReturnType<typeof sql>) => query.execute(db);
  // PostgreSQL plans the joins below as nested loops over whole tables until it has their statistics.
  const statistics = async () => {
    if (!sqlite) await analyzeTables(e);
  };

  await run(sql`${series(n.tenants)} insert into tenants
    (id, organization_id, project_id, environment_id, key, name, description, attributes, created_at, updated_at, last_action_at)
    select ${uuid}, ${scope}, ${text("t-")}, ${text("Tenant ")}, null, null, ${at}, ${at}, ${at} from series`);
  const resourceId = (
    await db
      .insertInto("resources")
      .values({
        id: crypto.randomUUID(),
        organization_id: env.organization_id,
        project_id: env.project_id,
        environment_id: envId,
        key: "doc",
        name: "doc",
        description: null,
        urn: null,
        type_attributes: null,
        built_in: 0,
        created_at: "2026-01-01T00:00:00.000+00:00",
        updated_at: "2026-01-01T00:00:00.000+00:00",
      })
      .returning("id")
      .executeTakeFirstOrThrow()
  ).id;
  const role = (key: string, resource: string | null) =>
    db
      .insertInto("roles")
      .values({
        id: crypto.randomUUID(),
        organization_id: env.organization_id,
        project_id: env.project_id,
        environment_id: envId,
        resource_id: resource,
        key,
        name: key,
        description: null,
        attributes: null,
        no_direct_roles_on_object: 0,
        created_at: "2026-01-01T00:00:00.000+00:00",
        updated_at: "2026-01-01T00:00:00.000+00:00",
      })
      .returning("id")
      .executeTakeFirstOrThrow();
  const memberRole = (await role("member", null)).id;
  const readerRole = (await role("reader", resourceId)).id;
  const relation = await db
    .insertInto("relations")
    .values({
      id: crypto.randomUUID(),
      organization_id: env.organization_id,
      project_id: env.project_id,
      environment_id: envId,
      object_resource_id: resourceId,
      subject_resource_id: resourceId,
      key: "parent",
      name: "parent",
      description: null,
      created_at: "2026-01-01T00:00:00.000+00:00",
      updated_at: "2026-01-01T00:00:00.000+00:00",
    })
    .returning("id")
    .executeTakeFirstOrThrow();

  await run(sql`${series(n.instances)} insert into resource_instances
    (id, organization_id, project_id, environment_id, resource_id, tenant_id, key, attributes, created_at, updated_at)
    select ${uuid}, ${scope}, ${resourceId}, t.id, ${text("d-")}, null, ${at}, ${at}
    from series join tenants t on t.environment_id = ${envId} and t.key = ${keyOf("t-", sql`i % ${sql.lit(n.tenants)}`)}`);
  await statistics();
  await run(sql`${series(n.users)} insert into users
    (id, organization_id, project_id, environment_id, key, email, first_name, last_name, attributes, created_at, updated_at)
    select ${uuid}, ${scope}, ${text("u-")}, ${text("user")} || '@example.com', ${text("First")}, ${text("Last")}, null, ${at}, ${at}
    from series`);
  await statistics();
  // Joined by key number: the tenant role, then the instance role (the instance's tenant).
  await run(sql`insert into role_assignments
    (id, organization_id, project_id, environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at, expires_at)
    select ${uuid}, ${scope}, u.id, ${memberRole}, t.id, null, u.created_at, null
    from users u join tenants t on t.environment_id = u.environment_id
      and t.key = ${keyOf("t-", sql`${number("u.key", "u-")} % ${sql.lit(n.tenants)}`)}
    where u.environment_id = ${envId}`);
  await run(sql`insert into role_assignments
    (id, organization_id, project_id, environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at, expires_at)
    select ${uuid}, ${scope}, u.id, ${readerRole}, ri.tenant_id, ri.id, u.created_at, null
    from users u join resource_instances ri on ri.environment_id = u.environment_id
      and ri.resource_id = ${resourceId} and ri.key = ${keyOf("d-", sql`${number("u.key", "u-")} % ${sql.lit(n.instances)}`)}
    where u.environment_id = ${envId} and ${number("u.key", "u-")} % 10 = 0`);
  await run(sql`insert into relationship_tuples
    (id, organization_id, project_id, environment_id, subject_id, relation_id, object_id, tenant_id, created_at, updated_at)
    select ${uuid}, ${scope}, s.id, ${relation.id}, o.id, o.tenant_id, o.created_at, o.created_at
    from resource_instances s join resource_instances o on o.environment_id = s.environment_id
      and o.resource_id = ${resourceId} and o.key = ${keyOf("d-", sql`${number("s.key", "d-")} + 1`)}
    where s.environment_id = ${envId}`);
  if (analyze) await analyzeTables(e);
  return {
    users: n.users,
    tenants: n.tenants,
    roleKey: "member",
    instances: n.instances,
    tuples: n.instances - 1,
  };
}

/** ANALYZE of the test's database: the SQLite file, or the tables of the test's PostgreSQL schema (not the others'). */
export async function analyzeTables(e: TestEnv): Promise<void> {
  if (e.dialect === "sqlite") {
    await e.store.db.executeQuery(CompiledQuery.raw("analyze"));
    return;
  }
  const tables = await sql<{ name: string }>`select tablename as name from pg_tables
    where schemaname = current_schema()`.execute(e.store.db);
  const names = tables.rows.map((t) => `"${t.name}"`).join(", ");
  await e.store.db.executeQuery(CompiledQuery.raw(`analyze ${names}`));
}
