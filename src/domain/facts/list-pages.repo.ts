import { sql, type Expression, type SqlBool } from "kysely";
import { isPostgres, type Db } from "../../db/db.ts";
import type { ListCountsTable } from "../../db/types.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";

/** A list whose unfiltered size is kept in list_counts (migration 0013). */
export type CountedList = Exclude<keyof ListCountsTable, "environment_id" | "version">;

/** The sort key of every paged facts list: created_at, then id. */
export interface ListKey {
  created_at: string;
  id: string;
}

/** Where a page starts: after `after` (in list order, when set), then `offset` more rows. */
export interface PageStart {
  after: ListKey | undefined;
  offset: number;
}

/** An unfiltered list's size and the version of its environment's lists (both from list_counts). */
export interface ListState {
  total: number;
  version: number;
}

/**
 * The number of rows of `list` in the environment, from the counter the triggers keep in the same transaction as
 * every insert and delete: one primary-key read instead of counting the environment's rows.
 */
export async function listState(db: Db, envId: string, list: CountedList): Promise<ListState> {
  const row = await db
    .selectFrom("list_counts")
    .select([sql.ref<number>(list).as("n"), "version"])
    .where("environment_id", "=", envId)
    .executeTakeFirst();
  return { total: Number(row?.n ?? 0), version: Number(row?.version ?? -1) };
}

/** `(alias.created_at, alias.id) > (after)`: the rows after a key, read as a range of the list's index. */
export const afterKey = (alias: string, after: ListKey): Expression<SqlBool> =>
  sql<SqlBool>`(${sql.ref(`${alias}.created_at`)}, ${sql.ref(`${alias}.id`)}) > (${after.created_at}, ${after.id})`;

/** Rows between two anchors: a deep page skips fewer than this many rows. */
export const ANCHOR_EVERY = 1000;
/** (environment, list) pairs whose anchors are kept, least recently used dropped first. */
const MAX_LISTS = 256;

interface Anchors {
  version: number;
  /** keys[k]: the key of the row at position (k + 1) * ANCHOR_EVERY - 1 (0-based) in list order. */
  keys: ListKey[];
}

const anchors = new Map<string, Anchors>();

/**
 * The next anchor: the key ANCHOR_EVERY rows after `after` (or from the start), read from the
 * (environment_id, created_at, id) index alone. One query per anchor: a window function over the walked rows
 * costs a sort of them on SQLite, several times the walk itself.
 */
export const anchorKeyQuery = (db: Db, list: CountedList, envId: string, after: ListKey | undefined) =>
  db
    // Every counted table has environment_id, created_at and id: typed as one of them.
    .selectFrom(`${list} as a` as "users as a")
    .select(["a.created_at", "a.id"])
    .where("a.environment_id", "=", envId)
    .where(seekAfter("a", after))
    .orderBy("a.created_at")
    .orderBy("a.id")
    .offset(ANCHOR_EVERY - 1)
    .limit(1);

/**
 * The next `count` anchors after `after` (or from the start) in one statement, for PostgreSQL: the walked range
 * numbered by `row_number()`, every ANCHOR_EVERY-th row kept. One anchor a query (above) is a sort of the rest of
 * the environment each when the planner has no statistics (a table filled since the last ANALYZE; autovacuum off):
 * a cold page 999 of 100k users was 99 such sorts, over 5 s. Here it is at most one; with statistics, one
 * index-only range. SQLite keeps the query above: it sorts for the window function, several times the walk.
 */
export const anchorKeysQuery = (
  db: Db,
  list: CountedList,
  envId: string,
  after: ListKey | undefined,
  count: number,
) =>
  db
    .selectFrom(
      db
        .selectFrom(`${list} as a` as "users as a")
        .select([
          "a.created_at",
          "a.id",
          sql<number>`row_number() over (order by ${sql.ref("a.created_at")}, ${sql.ref("a.id")})`.as("rn"),
        ])
        .where("a.environment_id", "=", envId)
        .where(seekAfter("a", after))
        .orderBy("a.created_at")
        .orderBy("a.id")
        .limit(count * ANCHOR_EVERY)
        .as("t"),
    )
    .select(["t.created_at", "t.id"])
    .where(sql<SqlBool>`${sql.ref("t.rn")} % ${ANCHOR_EVERY} = 0`)
    .orderBy("t.rn");

/** The anchors after the known ones, up to `blocks` in all (fewer at the list's end). */
async function walkAnchors(db: Db, list: CountedList, envId: string, keys: ListKey[], blocks: number) {
  if (isPostgres(db)) {
    keys.push(...(await anchorKeysQuery(db, list, envId, keys.at(-1), blocks - keys.length).execute()));
    return;
  }
  while (keys.length < blocks) {
    const next = await anchorKeyQuery(db, list, envId, keys.at(-1)).executeTakeFirst();
    if (!next) break;
    keys.push(next);
  }
}

/**
 * Where a page of an unfiltered list starts: instead of OFFSET over every row before it, a seek past the nearest
 * anchor (a key kept every ANCHOR_EVERY rows) and an OFFSET of fewer than ANCHOR_EVERY rows. The anchors are
 * exact while the environment's list version is unchanged (no row of a counted list inserted or deleted; the
 * sort key never changes), are kept per process, and are found again by one walk of the index after a change.
 */
export async function pageStart(
  db: Db,
  list: CountedList,
  envId: string,
  state: ListState,
  p: PageRequest,
): Promise<PageStart> {
  const offset = offsetOf(p);
  const blocks = Math.min(Math.floor(offset / ANCHOR_EVERY), Math.floor(state.total / ANCHOR_EVERY));
  if (blocks === 0) return { after: undefined, offset };
  const cacheKey = `${envId}:${list}`;
  let known = anchors.get(cacheKey);
  anchors.delete(cacheKey);
  if (!known || known.version !== state.version) known = { version: state.version, keys: [] };
  if (known.keys.length < blocks) await walkAnchors(db, list, envId, known.keys, blocks);
  anchors.set(cacheKey, known);
  if (anchors.size > MAX_LISTS) anchors.delete(anchors.keys().next().value as string);
  const usable = Math.min(blocks, known.keys.length);
  if (usable === 0) return { after: undefined, offset };
  return { after: known.keys[usable - 1], offset: offset - usable * ANCHOR_EVERY };
}

/**
 * Where a page starts and, for an unfiltered list, its total from the counter. A filtered list starts at its
 * OFFSET and is counted by its caller.
 */
export async function listPage(
  db: Db,
  list: CountedList,
  envId: string,
  p: PageRequest,
  filtered: boolean,
): Promise<{ start: PageStart; total: number | undefined }> {
  if (filtered) return { start: { after: undefined, offset: offsetOf(p) }, total: undefined };
  const state = await listState(db, envId, list);
  return { start: await pageStart(db, list, envId, state, p), total: state.total };
}

/** True when no field of a list filter is set. */
export const noFilter = (f: object): boolean => Object.values(f).every((v) => v === undefined);

/** The rows after `after` in list order, when given (a seek from an anchor). */
export const seekAfter = (alias: string, after: ListKey | undefined) =>
  after === undefined ? sql<SqlBool>`true` : afterKey(alias, after);

/**
 * One page of a counted facts list: `filter` null means it names something that does not exist (an empty list);
 * an unfiltered page seeks from the list's anchors and takes its total from list_counts, a filtered one counts when
 * asked.
 */
export async function filteredPage<F extends object, R>(
  db: Db,
  list: CountedList,
  envId: string,
  p: PageRequest,
  filter: F | null,
  query: {
    rows(
      db: Db,
      envId: string,
      f: F,
      offset: number,
      limit: number,
      after: ListKey | undefined,
    ): Promise<R[]>;
    count(db: Db, envId: string, f: F): Promise<number>;
  },
): Promise<{ rows: R[]; total: () => Promise<number> }> {
  if (!filter) return { rows: [], total: async () => 0 };
  const { start, total } = await listPage(db, list, envId, p, !noFilter(filter));
  const rows = await query.rows(db, envId, filter, start.offset, p.perPage, start.after);
  return { rows, total: async () => total ?? query.count(db, envId, filter) };
}
