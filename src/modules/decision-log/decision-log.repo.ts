import { sql, type RawBuilder } from "kysely";
import type { Db } from "../../db/db.ts";
import type { Dialect } from "../../db/store.ts";
import { toTimestamp } from "../../lib/time.ts";
import { timeOfId } from "../../lib/ids.ts";
import { optionalDecisionFields, type DecisionLogEntry, type DecisionRecord } from "../../pdp/storage.ts";

/**
 * The first 48 bits of a UUIDv7 are its time in milliseconds: the text every id made at `ms` or later is at
 * least, and every id made before it is less than.
 */
export function idAt(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}`;
}

export { timeOfId };

export interface DecisionLogFilter {
  pdpId?: string | undefined;
  users?: string[] | undefined;
  decision?: boolean | undefined;
  resources?: string[] | undefined;
  tenant?: string | undefined;
  action?: string | undefined;
  /** Milliseconds since the epoch, inclusive. */
  fromMs?: number | undefined;
  /** Milliseconds since the epoch, inclusive. */
  toMs?: number | undefined;
  query?: string | undefined;
}

/** A decision read back: its entry and when its chunk reached the database. */
export interface StoredDecision {
  entry: DecisionLogEntry;
  created_at: string;
}

/**
 * Reading entries out of chunks with the database's JSON functions. An entry `e` is one decision, or a bulk
 * request's checks (`{"query","revision","bulk":[...]}`, decision-log.ts): `d` is each of its checks, null for a
 * plain entry (told apart by its first characters, so a plain entry is not parsed again), and a field is the check's, else the entry's (query and revision are the bulk's). So every check
 * reads back as a decision of its own. `contains` looks for text in a chunk before its entries are unpacked:
 * entries are written as JSON.stringify writes them, so an entry whose field equals a value holds
 * `"field":<the value as JSON.stringify writes it>`, and a chunk without that text holds no such entry.
 */
/** How a bulk entry's text starts (decision-log.ts writes it so; any other entry starts with its id). */
const BULK_START = '{"query":';

const chunkSql = {
  sqlite: {
    from: sql`decision_log_chunks c, json_each(c.entries) e
      left join json_each(case when substr(e.value, 1, 9) = ${BULK_START} then e.value end, '$.bulk') d`,
    field: (name: string) =>
      sql`coalesce(d.value ->> ${sql.lit(`$.${name}`)}, e.value ->> ${sql.lit(`$.${name}`)})`,
    entry: sql`coalesce(d.value, e.value)`,
    contains: (text: string) => sql`instr(c.entries, ${text}) > 0`,
    isTrue: (value: boolean) => sql`(coalesce(d.value, e.value) ->> '$.decision') = ${value ? 1 : 0}`,
  },
  postgres: {
    from: sql`decision_log_chunks c cross join lateral json_array_elements(c.entries::json) e(value)
      left join lateral json_array_elements(case when left(e.value::text, 9) = ${BULK_START}
        then e.value -> 'bulk' end) d(value) on true`,
    field: (name: string) => sql`coalesce(d.value ->> ${sql.lit(name)}, e.value ->> ${sql.lit(name)})`,
    entry: sql`coalesce(d.value, e.value)::text`,
    contains: (text: string) => sql`strpos(c.entries, ${text}) > 0`,
    isTrue: (value: boolean) =>
      sql`(coalesce(d.value, e.value) ->> 'decision') = ${value ? "true" : "false"}`,
  },
} satisfies Record<Dialect, unknown>;

/** The columns of one decision read back: the check (or plain entry), and its bulk's query and revision. */
const entryColumns = (dialect: Dialect) => {
  const q = chunkSql[dialect];
  return sql`${q.entry} as entry, ${q.field("query")} as query, ${q.field("revision")} as revision,
    c.pdp_id, c.created_at`;
};

const needle = (field: string, value: unknown) => `"${field}":${JSON.stringify(value)}`;

/** The conditions of a filter, on the chunk (cheap, by its ids and text) and then on each entry (exact). */
function conditions(dialect: Dialect, environmentId: string, f: DecisionLogFilter): RawBuilder<unknown>[] {
  const q = chunkSql[dialect];
  const where: RawBuilder<unknown>[] = [sql`c.environment_id = ${environmentId}`];
  const equals = (field: string, value: string | undefined) => {
    if (value === undefined || value === "") return;
    where.push(q.contains(needle(field, value)), sql`${q.field(field)} = ${value}`);
  };
  const oneOf = (field: string, values: string[] | undefined) => {
    if (!values?.length) return;
    where.push(
      sql`(${sql.join(
        values.map((v) => q.contains(needle(field, v))),
        sql` or `,
      )})`,
      sql`${q.field(field)} in (${sql.join(values)})`,
    );
  };
  if (f.pdpId !== undefined && f.pdpId !== "") {
    // The chunk's PDP, or in a chunk stored before migration 0011 the entry's.
    where.push(
      sql`(c.pdp_id = ${f.pdpId} or ${q.contains(needle("pdp_id", f.pdpId))})`,
      sql`coalesce(${q.field("pdp_id")}, c.pdp_id) = ${f.pdpId}`,
    );
  }
  oneOf("user_key", f.users);
  oneOf("resource_type", f.resources);
  equals("tenant", f.tenant);
  equals("action", f.action);
  equals("query", f.query);
  if (f.decision !== undefined) where.push(q.contains(needle("decision", f.decision)), q.isTrue(f.decision));
  if (f.fromMs !== undefined) {
    const from = idAt(f.fromMs);
    where.push(sql`c.last_id >= ${from}`, sql`${q.field("id")} >= ${from}`);
  }
  if (f.toMs !== undefined) {
    const to = idAt(f.toMs + 1);
    where.push(sql`c.first_id < ${to}`, sql`${q.field("id")} < ${to}`);
  }
  return where;
}

const isFiltered = (f: DecisionLogFilter) => Object.values(f).some((v) => v !== undefined);

/**
 * Newest first. Without a filter the total is the sum of the chunks' counts, and only the chunks that can hold
 * the page are unpacked: taking chunks by their last id, newest first, until they hold offset + limit entries,
 * the page's entries are all at least the least first id among them, so no chunk whose last id is below it can
 * hold one. With a filter, every chunk that may match is unpacked.
 */
export async function listDecisionLogs(
  db: Db,
  dialect: Dialect,
  environmentId: string,
  f: DecisionLogFilter,
  offset: number,
  limit: number,
): Promise<{ rows: StoredDecision[]; total: number }> {
  const q = chunkSql[dialect];
  const where = conditions(dialect, environmentId, f);
  const page = (total: RawBuilder<unknown>) =>
    sql<
      StoredRow & { total: number | string }
    >`select ${entryColumns(dialect)}, ${total} as total from ${q.from} where ${sql.join(where, sql` and `)}
      order by ${q.field("id")} desc limit ${limit} offset ${offset}`.execute(db);
  if (isFiltered(f)) {
    // One pass over the matching entries gives the page and, by a window over them all, the total.
    const { rows } = await page(sql`count(*) over ()`);
    const first = rows[0];
    if (first !== undefined || offset === 0)
      return { rows: rows.map(stored), total: Number(first?.total ?? 0) };
    // A page past the end: the total alone.
    const count = await sql<{ n: number | string }>`select count(*) as n from ${q.from}
      where ${sql.join(where, sql` and `)}`.execute(db);
    return { rows: [], total: Number(count.rows[0]?.n ?? 0) };
  }
  const newest = await db
    .selectFrom("decision_log_chunks")
    .select(["first_id", "count"])
    .where("environment_id", "=", environmentId)
    .orderBy("last_id", "desc")
    .limit(offset + limit)
    .execute();
  let held = 0;
  let least: string | undefined;
  for (const chunk of newest) {
    held += chunk.count;
    if (least === undefined || chunk.first_id < least) least = chunk.first_id;
    if (held >= offset + limit) break;
  }
  if (held >= offset + limit && least !== undefined) where.push(sql`c.last_id >= ${least}`);
  const sum = await db
    .selectFrom("decision_log_chunks")
    .select((eb) => eb.fn.sum<number | string>("count").as("n"))
    .where("environment_id", "=", environmentId)
    .executeTakeFirst();
  const { rows } = await page(sql`0`);
  return { rows: rows.map(stored), total: Number(sum?.n ?? 0) };
}

interface StoredRow {
  entry: string;
  /** The entry's, or for a check of a bulk entry, the bulk's. */
  query: string;
  revision: number | string;
  pdp_id: string | null;
  created_at: string;
}

/** As stored: the id and the record's fields; entries of chunks stored before migration 0011 hold all of them. */
type StoredEntry = Omit<DecisionRecord, "query" | "revision"> &
  Partial<Pick<DecisionRecord, "query" | "revision">> & { id: string; timestamp?: string; pdp_id?: string };

/** Every field of the entry: null where the record left it out, the PDP the chunk's, the time the id's. */
const stored = (row: StoredRow): StoredDecision => {
  const e = JSON.parse(row.entry) as StoredEntry;
  return {
    entry: {
      id: e.id,
      timestamp: e.timestamp ?? toTimestamp(new Date(timeOfId(e.id))),
      pdp_id: e.pdp_id ?? row.pdp_id ?? "",
      query: e.query ?? (row.query as DecisionLogEntry["query"]),
      ...optionalDecisionFields(e, null),
      revision: e.revision ?? Number(row.revision),
      latency_us: e.latency_us,
    },
    created_at: row.created_at,
  };
};

/** Along the index of last ids: the chunks ending at or after the id, then the one whose range holds it. */
export async function findDecisionLog(
  db: Db,
  dialect: Dialect,
  environmentId: string,
  id: string,
): Promise<StoredDecision | undefined> {
  const q = chunkSql[dialect];
  const found = await sql<StoredRow>`select ${entryColumns(dialect)}
    from ${q.from} where c.environment_id = ${environmentId} and c.last_id >= ${id} and c.first_id <= ${id}
    and ${q.contains(needle("id", id))} and ${q.field("id")} = ${id} limit 1`.execute(db);
  const row = found.rows[0];
  return row && stored(row);
}

/** Chunks a purge deletes per statement: an hour of a busy PDP's log is millions of decisions. */
const PURGE_BATCH_CHUNKS = 200;

/**
 * Deletes the chunks whose every entry is older than `beforeMs`, one environment at a time along the index of
 * last ids. A chunk spans one flush of one PDP (a fraction of a second), so its older entries outlive the
 * retention by at most that. It deletes `batch` chunks per statement and lets the event loop run between them:
 * one statement for an hour of a busy log held the loop (and the PDP's checks) for seconds.
 */
export async function purgeDecisionLogs(
  db: Db,
  beforeMs: number,
  batch = PURGE_BATCH_CHUNKS,
): Promise<number> {
  const environments = await db.selectFrom("environments").select("id").execute();
  const before = idAt(beforeMs);
  let deleted = 0;
  for (const { id } of environments) {
    for (;;) {
      // The batch's last chunk, or none when fewer are left: then the rest goes.
      const bound = await db
        .selectFrom("decision_log_chunks")
        .select("last_id")
        .where("environment_id", "=", id)
        .where("last_id", "<", before)
        .orderBy("last_id")
        .limit(1)
        .offset(batch - 1)
        .executeTakeFirst();
      const gone = await db
        .deleteFrom("decision_log_chunks")
        .where("environment_id", "=", id)
        .where("last_id", bound ? "<=" : "<", bound ? bound.last_id : before)
        .returning("count")
        .execute();
      deleted += gone.reduce((n, chunk) => n + chunk.count, 0);
      if (!bound) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return deleted;
}

/**
 * Checks per minute, allowed and denied, for a filter that bounds the time. Grouped in the database by the
 * millisecond an id holds (its first 13 characters), then by minute here: neither dialect shares a way to read hex.
 */
export async function countDecisionsPerMinute(
  db: Db,
  dialect: Dialect,
  environmentId: string,
  f: DecisionLogFilter,
): Promise<{ minuteMs: number; decision: boolean; count: number }[]> {
  const q = chunkSql[dialect];
  const where = conditions(dialect, environmentId, f);
  const ms = sql<string>`substr(${q.field("id")}, 1, 13)`;
  const decision = q.field("decision");
  const { rows } = await sql<{
    ms: string;
    decision: string | number;
    n: number | string;
  }>`select ${ms} as ms,
    ${decision} as decision, count(*) as n from ${q.from}
    where ${sql.join(where, sql` and `)} and ${decision} is not null
    group by ${ms}, ${decision}`.execute(db);
  const counts = new Map<string, { minuteMs: number; decision: boolean; count: number }>();
  for (const row of rows) {
    const minuteMs = Math.floor(timeOfId(row.ms) / 60_000) * 60_000;
    const allowed = row.decision === 1 || row.decision === "1" || row.decision === "true";
    const key = `${minuteMs}:${allowed}`;
    const entry = counts.get(key) ?? { minuteMs, decision: allowed, count: 0 };
    entry.count += Number(row.n);
    counts.set(key, entry);
  }
  return [...counts.values()].sort(
    (a, b) => a.minuteMs - b.minuteMs || Number(b.decision) - Number(a.decision),
  );
}

/** Chunks read per statement by `decisionLogChunks`: up to 16,000 decisions, a few megabytes of text. */
const STREAM_CHUNKS = 16;

/**
 * The chunks that may hold decisions of [fromMs, toMs], oldest first, read `pageSize` chunks per statement along
 * the (environment, first id, last id) index, so that a window of any size is never in memory at once. Each
 * chunk's entries are its stored JSON text: the caller keeps the entries whose ids are in the window.
 */
export async function* decisionLogChunks(
  db: Db,
  environmentId: string,
  fromMs: number,
  toMs: number,
  pageSize = STREAM_CHUNKS,
): AsyncGenerator<string> {
  const from = idAt(fromMs);
  const to = idAt(toMs + 1);
  const read = (after?: { first_id: string; last_id: string }) =>
    db
      .selectFrom("decision_log_chunks")
      .select(["first_id", "last_id", "entries"])
      .where("environment_id", "=", environmentId)
      .where("first_id", "<", to)
      .where("last_id", ">=", from)
      .$if(after !== undefined, (q) =>
        q.where((eb) =>
          eb.or([
            eb("first_id", ">", after!.first_id),
            eb.and([eb("first_id", "=", after!.first_id), eb("last_id", ">", after!.last_id)]),
          ]),
        ),
      )
      .orderBy("first_id")
      .orderBy("last_id")
      .limit(pageSize)
      .execute();
  let page = await read();
  for (;;) {
    const last = page[page.length - 1];
    // The next page is read (on the reader's thread or the database's side) while the caller works on this one.
    const next = page.length < pageSize || last === undefined ? undefined : read(last);
    next?.catch(() => {});
    for (const chunk of page) yield chunk.entries;
    if (next === undefined) return;
    page = await next;
  }
}
