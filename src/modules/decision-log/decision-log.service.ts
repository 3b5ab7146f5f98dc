import type { Kysely } from "kysely";
import type { Dialect } from "../../db/store.ts";
import type { Database } from "../../db/types.ts";

import { invalid, notFound } from "../../lib/errors.ts";
import { envelope, offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now, toTimestamp } from "../../lib/time.ts";
import { optionalDecisionFields, type DecisionLogChunk, type DecisionLogEntry } from "../../pdp/storage.ts";
import { DECISION_STATS_MAX_MINUTES, type ShippedDecision } from "./decision-log.schemas.ts";
import { describeReason } from "../../pdp/engine/describe.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import {
  purgeDecisionLogs,
  countDecisionsPerMinute,
  findDecisionLog,
  listDecisionLogs,
  type DecisionLogFilter,
  type StoredDecision,
} from "./decision-log.repo.ts";
import { insertDecisionLogChunk } from "../../domain/decision-log/database-sink.ts";

/** The input of a check stored without one: the PDP leaves out what the entry's fields already say. */
const checkInput = (e: DecisionLogEntry) => ({
  user: { key: e.user_key },
  action: e.action,
  resource: {
    type: e.resource_type,
    ...(e.resource_key !== null && { key: e.resource_key }),
    tenant: e.tenant,
  },
  context: {},
});

/**
 * An entry as the PDP's logger writes it: the id, then the record's fields in its order, nulls left out; its time
 * is the id's; its PDP is named only when it is not the chunk's.
 */
const asStored = (e: ShippedDecision, chunkPdp: string) => ({
  id: e.id,
  ...(e.pdp_id !== undefined && e.pdp_id !== chunkPdp && { pdp_id: e.pdp_id }),
  query: e.query,
  ...optionalDecisionFields(e, undefined),
  revision: e.revision,
  latency_us: e.latency_us,
});

/** The environment's ids, which the entries of its chunks leave out. */
interface Owner {
  organization_id: string;
  project_id: string;
  id: string;
}

const readLog = ({ entry: e, created_at }: StoredDecision, env: Owner) => {
  const isCheck = e.decision !== null;
  return {
    id: e.id,
    timestamp: e.timestamp,
    created_at,
    query: e.query,
    ...(e.user_key !== null && { user_key: e.user_key }),
    ...(e.resource_type !== null && { resource_type: e.resource_type }),
    ...(e.resource_key !== null && { resource_key: e.resource_key }),
    ...(e.tenant !== null && { tenant: e.tenant }),
    ...(e.action !== null && { action: e.action }),
    ...(e.decision !== null && { decision: e.decision }),
    ...(e.reason !== null && { reason: describeReason(e.reason) ?? JSON.stringify(e.reason) }),
    org_id: env.organization_id,
    project_id: env.project_id,
    env_id: env.id,
    pdp_config_id: e.pdp_id,
    revision: e.revision,
    latency_us: e.latency_us,
    input: e.input === null && isCheck ? checkInput(e) : e.input,
    // A check's answer is its decision; only other queries store a result of their own.
    result: e.result === null && isCheck ? { allow: e.decision } : e.result,
  };
};

/** Deletes decisions older than the retention; 0 days keeps them forever. Returns how many went. */
export async function purgeDecisionLogsOlderThan(
  db: Kysely<Database>,
  retentionDays: number,
  nowMs = Date.now(),
) {
  if (retentionDays <= 0) return 0;
  return purgeDecisionLogs(db, nowMs - retentionDays * 86_400_000);
}

export interface AuditLogQueryInput {
  pdp_id?: string;
  users?: string[];
  decision?: boolean;
  resources?: string[];
  tenant?: string;
  action?: string;
  timestamp_from?: number;
  timestamp_to?: number;
  query?: string;
}

export function createDecisionLogService(deps: {
  db: Kysely<Database>;
  /** Where lists and lookups run: on SQLite a connection on its own thread, else `db`. */
  readDb: Kysely<Database>;
  dialect: Dialect;
  /** A chunk stored (log export). */
  exported?: (chunk: DecisionLogChunk) => void;
}) {
  const { db, readDb, dialect } = deps;
  return {
    async list({ environment }: EnvScope, q: AuditLogQueryInput, page: PageRequest) {
      const filter: DecisionLogFilter = {
        pdpId: q.pdp_id,
        users: q.users,
        decision: q.decision,
        resources: q.resources,
        tenant: q.tenant,
        action: q.action,
        fromMs: q.timestamp_from === undefined ? undefined : q.timestamp_from * 1000,
        toMs: q.timestamp_to === undefined ? undefined : q.timestamp_to * 1000,
        query: q.query === "none" ? undefined : q.query,
      };
      const { rows, total } = await listDecisionLogs(
        readDb,
        dialect,
        environment.id,
        filter,
        offsetOf(page),
        page.perPage,
      );
      const result = envelope(
        rows.map((row) => readLog(row, environment)),
        total,
        page,
      );
      return { ...result, pagination_count: result.page_count };
    },

    /** Checks per minute, allowed and denied, over [from, to] (default: the last hour; at most a week). */
    async stats({ environment }: EnvScope, q: AuditLogQueryInput) {
      const to = q.timestamp_to ?? Math.floor(Date.now() / 1000);
      const from = q.timestamp_from ?? to - 3600;
      if (to < from || (to - from) / 60 > DECISION_STATS_MAX_MINUTES) {
        throw invalid(`the range must run forward and span at most ${DECISION_STATS_MAX_MINUTES} minutes`, [
          "query",
        ]);
      }
      const rows = await countDecisionsPerMinute(readDb, dialect, environment.id, {
        users: q.users,
        decision: q.decision,
        resources: q.resources,
        tenant: q.tenant,
        action: q.action,
        fromMs: from * 1000,
        toMs: to * 1000 + 999,
      });
      return {
        from: toTimestamp(new Date(from * 1000)),
        until: toTimestamp(new Date(to * 1000)),
        data: rows.map((r) => ({
          minute: toTimestamp(new Date(r.minuteMs)),
          decision: r.decision ? ("allow" as const) : ("deny" as const),
          count: r.count,
        })),
      };
    },

    async get({ environment }: EnvScope, id: string) {
      const row = await findDecisionLog(readDb, dialect, environment.id, id);
      if (!row) throw notFound("decision log", id);
      return readLog(row, environment);
    },

    /**
     * Standalone PDPs ship their decisions here, one environment's chunk at a time: stored as one chunk of the
     * path's environment, whatever environment the entries name.
     */
    async ingest({ environment }: EnvScope, entries: ShippedDecision[], pdpId?: string) {
      if (entries.length === 0) return { accepted: 0 };
      const chunkPdp = pdpId ?? entries[0]?.pdp_id;
      if (chunkPdp === undefined || (pdpId === undefined && entries.some((e) => e.pdp_id === undefined)))
        throw invalid("name the PDP: the query's pdp_id, or pdp_id in every entry", [
          "querystring",
          "pdp_id",
        ]);
      const ids = entries.map((e) => e.id).sort();
      const chunk = {
        environmentId: environment.id,
        pdpId: chunkPdp,
        entries: Buffer.from(JSON.stringify(entries.map((e) => asStored(e, chunkPdp)))),
        count: entries.length,
        firstId: ids[0] as string,
        lastId: ids[ids.length - 1] as string,
      };
      if ((await insertDecisionLogChunk(db, dialect, chunk, now())) > 0) deps.exported?.(chunk);
      return { accepted: entries.length };
    },
  };
}

export type DecisionLogService = ReturnType<typeof createDecisionLogService>;
