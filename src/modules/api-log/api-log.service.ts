import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { type Principal } from "../../lib/access.ts";
import { invalid, notFound } from "../../lib/errors.ts";
import { envelope, offsetOf, pageRequest } from "../../lib/pagination.ts";

import { toTimestamp } from "../../lib/time.ts";
import { gunzipText } from "../../lib/gzip-text.ts";

import {
  countPerMinute,
  environmentIdsOf,
  findEvent,
  listEvents,
  projectIdsOf,
  type ApiLogRow,
  type ApiLogSummaryRow,
  type ApiLogFilter,
} from "./api-log.repo.ts";
import {
  STATS_MAX_MINUTES,
  type APIHistoryEventFullRead,
  type APIHistoryEventRead,
  type APIHistoryPage,
  type HistoryQuery,
  type HistoryStats,
  type HistoryStatsQuery,
} from "./api-log.schemas.ts";

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

export function eventRead(row: ApiLogSummaryRow): APIHistoryEventRead {
  return {
    timestamp: row.timestamp,
    timestamp_utc: row.timestamp,
    method: row.method,
    path: row.path,
    success: row.success === 1,
    status: row.status,
    ...(row.request_id !== null && { request_id: row.request_id }),
    client_ip: row.client_ip,
    actor_type: row.actor_type,
    // Records an organization can read always have a key; only 401 records (no organization) lack one.
    actor_id: row.actor_id ?? NIL_UUID,
    ...(row.actor_display_name !== null && { actor_display_name: row.actor_display_name }),
    ...(row.organization_id !== null && { org_id: row.organization_id }),
    ...(row.project_key !== null && { project_key: row.project_key }),
    ...(row.project_id !== null && { project_id: row.project_id }),
    ...(row.environment_key !== null && { env_key: row.environment_key }),
    ...(row.environment_id !== null && { env_id: row.environment_id }),
    id: row.id,
  };
}

/** The part of the organization's log a key may read: all of it, or the calls under its project/environment. */
function scopeOf(
  principal: Principal,
): Pick<ApiLogFilter, "organizationId" | "scopeProjectId" | "scopeEnvironmentId"> {
  return {
    organizationId: principal.organizationId,
    ...(principal.level === "project" &&
      principal.projectId !== null && { scopeProjectId: principal.projectId }),
    ...(principal.level === "env" &&
      principal.environmentId !== null && { scopeEnvironmentId: principal.environmentId }),
  };
}

function inScope(principal: Principal, row: ApiLogRow): boolean {
  if (principal.level === "env") return row.environment_id === principal.environmentId;
  if (principal.level === "project") return row.project_id === principal.projectId;
  return true;
}

export function createApiLogService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  /** The record with its response body as text (a large one is stored compressed). */
  async function event(principal: Principal, id: string): Promise<ApiLogRow> {
    const row = await findEvent(db, principal.organizationId, id.toLowerCase());
    // Out of the key's scope looks the same as missing.
    if (!row || !inScope(principal, row)) throw notFound("API history event", id);
    return row.response_body_gzip === null
      ? row
      : { ...row, response_body: await gunzipText(row.response_body_gzip), response_body_gzip: null };
  }

  /** The query's filters within the principal's scope; null when a named project or environment does not exist. */
  async function filterOf(principal: Principal, query: HistoryStatsQuery): Promise<ApiLogFilter | null> {
    const filter: ApiLogFilter = {
      ...scopeOf(principal),
      methods: query.method?.map((m) => m.toUpperCase()),
      paths: query.path,
      text: query.text,
      statuses: query.status_code,
      success: query.success,
      clientIps: query.client_ip,
      actorTypes: query.actor_type,
      actorIds: query.actor_id?.map((a) => a.toLowerCase()),
      actorDisplayName: query.actor_display_name,
      ...(query.timestamp_from !== undefined && {
        from: toTimestamp(new Date(query.timestamp_from * 1000)),
      }),
      ...(query.timestamp_until !== undefined && {
        before: toTimestamp(new Date((query.timestamp_until + 1) * 1000)),
      }),
    };
    // Project and environment filters take ids or keys; names that match nothing match no record.
    if (query.project_id?.length) {
      filter.projectIds = await projectIdsOf(db, principal.organizationId, query.project_id);
      if (filter.projectIds.length === 0) return null;
    }
    if (query.env_id?.length) {
      filter.environmentIds = await environmentIdsOf(
        db,
        principal.organizationId,
        query.env_id,
        filter.projectIds,
      );
      if (filter.environmentIds.length === 0) return null;
    }
    for (const list of ["methods", "paths", "statuses", "clientIps", "actorTypes", "actorIds"] as const) {
      if (filter[list]?.length === 0) delete filter[list];
    }
    return filter;
  }

  return {
    async list(principal: Principal, query: HistoryQuery): Promise<APIHistoryPage> {
      const page = pageRequest(query);
      const filter = await filterOf(principal, query);
      if (!filter) return { data: [], total_count: 0, page_count: 0, pagination_count: 0 };
      const { rows, total } = await listEvents(
        readDb,
        filter,
        offsetOf(page),
        page.perPage,
        query.with_request_body,
      );
      const data = rows.map((row) => ({
        ...eventRead(row),
        ...(typeof row.request_body === "string" && { request_body: row.request_body }),
      }));
      return { ...envelope(data, total, page), pagination_count: total };
    },

    /** Calls per minute by status class over [from, until] (default: the last hour; at most a week). */
    async stats(principal: Principal, query: HistoryStatsQuery): Promise<HistoryStats> {
      const until = query.timestamp_until ?? Math.floor(Date.now() / 1000);
      const from = query.timestamp_from ?? until - 3600;
      if (until < from || (until - from) / 60 > STATS_MAX_MINUTES) {
        throw invalid(`the range must run forward and span at most ${STATS_MAX_MINUTES} minutes`, ["query"]);
      }
      const range = { from: toTimestamp(new Date(from * 1000)), until: toTimestamp(new Date(until * 1000)) };
      const filter = await filterOf(principal, { ...query, timestamp_from: from, timestamp_until: until });
      const rows = filter ? await countPerMinute(readDb, filter) : [];
      return {
        ...range,
        data: rows.map((r) => ({
          minute: `${r.minute}:00+00:00`,
          status_class: `${Number(r.status_class)}xx` as HistoryStats["data"][number]["status_class"],
          count: Number(r.n),
        })),
      };
    },

    async get(principal: Principal, id: string): Promise<APIHistoryEventFullRead> {
      const row = await event(principal, id);
      return {
        ...(row.request_body !== null && { request_body: row.request_body }),
        ...(row.response_body !== null && { response_body: row.response_body }),
        ...eventRead(row),
      };
    },

    async requestBody(principal: Principal, id: string): Promise<string> {
      return (await event(principal, id)).request_body ?? "";
    },

    async responseBody(principal: Principal, id: string): Promise<string> {
      return (await event(principal, id)).response_body ?? "";
    },
  };
}

export type ApiLogService = ReturnType<typeof createApiLogService>;
