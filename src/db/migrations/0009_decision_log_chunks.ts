import { sql, type Kysely } from "kysely";

interface OldRow {
  id: string;
  environment_id: string;
  pdp_id: string;
  query: string;
  user_key: string | null;
  action: string | null;
  resource_type: string | null;
  resource_key: string | null;
  tenant: string | null;
  decision: number | null;
  reason: string | null;
  input: string | null;
  result: string | null;
  revision: number | string;
  latency_us: number;
  timestamp: string;
  created_at: string;
}

const parsed = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

/**
 * The decision log is stored as chunks: one row holds up to 1,000 decisions of one environment as the JSON text
 * the PDP encoded, so logging a decision costs the database a share of one insert instead of a row with nineteen
 * bound values and two index entries. Existing decisions move into chunks of up to 1,000, environment by
 * environment in id order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("decision_log_chunks")
    .addColumn("environment_id", "text", (c) => c.notNull().references("environments.id").onDelete("cascade"))
    .addColumn("first_id", "text", (c) => c.notNull())
    .addColumn("last_id", "text", (c) => c.notNull())
    .addColumn("count", "integer", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("entries", "text", (c) => c.notNull())
    .execute();
  // Unique, so that a chunk shipped twice (a retry after a lost answer) is stored once.
  await db.schema
    .createIndex("decision_log_chunks_first_idx")
    .unique()
    .on("decision_log_chunks")
    .columns(["environment_id", "first_id", "last_id"])
    .execute();
  // Newest first for listing, and the retention purge; covers what both read before the entries.
  await db.schema
    .createIndex("decision_log_chunks_last_idx")
    .on("decision_log_chunks")
    .columns(["environment_id", "last_id", "first_id", "count"])
    .execute();

  const environments = await sql<{
    environment_id: string;
  }>`select distinct environment_id from decision_logs`.execute(db);
  for (const { environment_id } of environments.rows) {
    let after = "";
    for (;;) {
      const { rows } = await sql<OldRow>`select * from decision_logs
        where environment_id = ${environment_id} and id > ${after} order by id limit 1000`.execute(db);
      const last = rows.at(-1);
      if (last === undefined) break;
      const entries = rows.map((r) => ({
        id: r.id,
        timestamp: r.timestamp,
        pdp_id: r.pdp_id,
        query: r.query,
        user_key: r.user_key,
        action: r.action,
        resource_type: r.resource_type,
        resource_key: r.resource_key,
        tenant: r.tenant,
        decision: r.decision === null ? null : Number(r.decision) === 1,
        reason: parsed(r.reason),
        input: parsed(r.input),
        result: parsed(r.result),
        revision: Number(r.revision),
        latency_us: r.latency_us,
      }));
      const createdAt = rows.reduce((max, r) => (r.created_at > max ? r.created_at : max), "");
      await sql`insert into decision_log_chunks (environment_id, first_id, last_id, count, created_at, entries)
        values (${environment_id}, ${rows[0]?.id}, ${last.id}, ${rows.length}, ${createdAt},
        ${JSON.stringify(entries)})`.execute(db);
      after = last.id;
    }
  }
  await db.schema.dropTable("decision_logs").execute();
}
