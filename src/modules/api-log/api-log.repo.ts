import { sql, type Kysely, type Selectable } from "kysely";
import type { ApiLogTable, Database } from "../../db/types.ts";
import { isUuid } from "../../lib/ids.ts";
import { isPostgres } from "../../db/db.ts";

export type ApiLogRow = Selectable<ApiLogTable>;

export type ApiLogSummaryRow = Omit<ApiLogRow, "request_body" | "response_body" | "response_body_gzip">;

/** What a history query may filter on; every list is "any of", and lists are never empty. */
export interface ApiLogFilter {
  organizationId: string;
  /** The reading key's own scope: a project or environment key sees only calls under it. */
  scopeProjectId?: string | undefined;
  scopeEnvironmentId?: string | undefined;
  projectIds?: string[] | undefined;
  environmentIds?: string[] | undefined;
  methods?: string[] | undefined;
  paths?: string[] | undefined;
  /** Text the path or the request body contains (case-sensitive on both databases). */
  text?: string | undefined;
  statuses?: number[] | undefined;
  success?: boolean | undefined;
  clientIps?: string[] | undefined;
  actorTypes?: string[] | undefined;
  actorIds?: string[] | undefined;
  actorDisplayName?: string | undefined;
  /** ISO timestamps: from inclusive, before exclusive. */
  from?: string | undefined;
  before?: string | undefined;
}

const SUMMARY_COLUMNS = [
  "id",
  "organization_id",
  "project_id",
  "project_key",
  "environment_id",
  "environment_key",
  "timestamp",
  "method",
  "path",
  "query",
  "status",
  "success",
  "duration_ms",
  "client_ip",
  "request_id",
  "actor_type",
  "actor_id",
  "actor_display_name",
] as const;

function filtered(db: Kysely<Database>, f: ApiLogFilter) {
  // The organization first, then the key's scope: the (organization_id, [project_id|environment_id], timestamp,
  // id) indexes serve both the filter and the newest-first order.
  let q = db.selectFrom("api_log").where("organization_id", "=", f.organizationId);
  if (f.scopeEnvironmentId !== undefined) q = q.where("environment_id", "=", f.scopeEnvironmentId);
  else if (f.scopeProjectId !== undefined) q = q.where("project_id", "=", f.scopeProjectId);
  if (f.projectIds) q = q.where("project_id", "in", f.projectIds);
  if (f.environmentIds) q = q.where("environment_id", "in", f.environmentIds);
  if (f.methods) q = q.where("method", "in", f.methods);
  if (f.paths) q = q.where("path", "in", f.paths);
  if (f.text !== undefined) {
    const find = sql.raw(isPostgres(db) ? "strpos" : "instr");
    const text = f.text;
    const within = (column: "path" | "request_body") =>
      sql<boolean>`${find}(coalesce(${sql.ref(column)}, ''), ${text}) > 0`;
    q = q.where((eb) => eb.or([within("path"), within("request_body")]));
  }
  if (f.statuses) q = q.where("status", "in", f.statuses);
  if (f.success !== undefined) q = q.where("success", "=", f.success ? 1 : 0);
  if (f.clientIps) q = q.where("client_ip", "in", f.clientIps);
  if (f.actorTypes) q = q.where("actor_type", "in", f.actorTypes);
  if (f.actorIds) q = q.where("actor_id", "in", f.actorIds);
  if (f.actorDisplayName !== undefined) q = q.where("actor_display_name", "=", f.actorDisplayName);
  if (f.from !== undefined) q = q.where("timestamp", ">=", f.from);
  if (f.before !== undefined) q = q.where("timestamp", "<", f.before);
  return q;
}

export async function listEvents(
  db: Kysely<Database>,
  filter: ApiLogFilter,
  offset: number,
  limit: number,
  withRequestBody = false,
): Promise<{ rows: (ApiLogSummaryRow & { request_body?: string | null })[]; total: number }> {
  const q = filtered(db, filter);
  const rows = await q
    .select(withRequestBody ? [...SUMMARY_COLUMNS, "request_body"] : SUMMARY_COLUMNS)
    .orderBy("timestamp", "desc")
    .orderBy("id", "desc")
    .offset(offset)
    .limit(limit)
    .execute();
  const count = await q.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  return { rows, total: Number(count.n) };
}

/** Calls per minute and status class (1 … 5): timestamps are ISO text, so a minute is their first 16 characters. */
export function countPerMinute(db: Kysely<Database>, filter: ApiLogFilter) {
  const minute = sql<string>`substr(timestamp, 1, 16)`;
  const statusClass = sql<number>`status / 100`;
  return filtered(db, filter)
    .select((eb) => [minute.as("minute"), statusClass.as("status_class"), eb.fn.countAll<number>().as("n")])
    .groupBy([minute, statusClass])
    .orderBy(minute)
    .execute();
}

export const findEvent = (
  db: Kysely<Database>,
  organizationId: string,
  id: string,
): Promise<ApiLogRow | undefined> =>
  db
    .selectFrom("api_log")
    .selectAll()
    .where("organization_id", "=", organizationId)
    .where("id", "=", id)
    .executeTakeFirst();

const splitRefs = (refs: string[]) => ({
  ids: refs.filter(isUuid).map((r) => r.toLowerCase()),
  keys: refs.filter((r) => !isUuid(r)),
});

/** Ids of the organization's projects named by id or key. */
export async function projectIdsOf(db: Kysely<Database>, organizationId: string, refs: string[]) {
  const { ids, keys } = splitRefs(refs);
  const rows = await db
    .selectFrom("projects")
    .select("id")
    .where("organization_id", "=", organizationId)
    .where((eb) =>
      eb.or([...(ids.length ? [eb("id", "in", ids)] : []), ...(keys.length ? [eb("key", "in", keys)] : [])]),
    )
    .execute();
  return rows.map((r) => r.id);
}

/** Ids of the organization's environments named by id or key (a key may name one in every project). */
export async function environmentIdsOf(
  db: Kysely<Database>,
  organizationId: string,
  refs: string[],
  projectIds: string[] | undefined,
) {
  const { ids, keys } = splitRefs(refs);
  let q = db
    .selectFrom("environments")
    .select("id")
    .where("organization_id", "=", organizationId)
    .where((eb) =>
      eb.or([...(ids.length ? [eb("id", "in", ids)] : []), ...(keys.length ? [eb("key", "in", keys)] : [])]),
    );
  if (projectIds) q = q.where("project_id", "in", projectIds);
  const rows = await q.execute();
  return rows.map((r) => r.id);
}
