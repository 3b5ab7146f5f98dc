import type { Kysely } from "kysely";
import type { Dialect } from "../../db/store.ts";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { notFound } from "../../lib/errors.ts";
import { fromJson } from "../../lib/json.ts";
import { envelope, offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { toTimestamp } from "../../lib/time.ts";
import type { DecisionLogEntry } from "../../pdp/decision-log.ts";
import type { Reason } from "../../pdp/engine/types.ts";
import type { ScopeService } from "../scope/scope.service.ts";
import {
  purgeDecisionLogs,
  findDecisionLog,
  insertDecisionLogs,
  listDecisionLogs,
  type DecisionLogFilter,
  type DecisionLogRow,
} from "./audit-logs.repo.ts";

/** One line a person can read: the grant path of an allow, the closest miss of a deny. */
export function describeReason(reason: unknown): string | undefined {
  const r = reason as Reason | null | undefined;
  if (!r || typeof r !== "object" || !("kind" in r)) return undefined;
  switch (r.kind) {
    case "rbac":
      return `allowed by role '${r.role}' in tenant '${r.tenant}'`;
    case "rebac": {
      const chain = r.via.map((hop) => `'${hop.role}' on ${hop.instance} via '${hop.relation}'`).join(" -> ");
      return `allowed by role '${r.role}' on ${r.instance}${chain ? `, derived from ${chain}` : ""}`;
    }
    case "abac":
      return `allowed by condition set rule: user set '${r.user_set}' on resource set '${r.resource_set}'`;
    case "deny":
      return `denied (${r.code}): ${r.message}`;
    default:
      return undefined;
  }
}

/** The input of a check stored without one: the PDP leaves out what the columns already say. */
const checkInput = (row: DecisionLogRow) => ({
  user: { key: row.user_key },
  action: row.action,
  resource: {
    type: row.resource_type,
    ...(row.resource_key !== null && { key: row.resource_key }),
    tenant: row.tenant,
  },
  context: {},
});

const isCheck = (row: DecisionLogRow) => row.decision !== null;

const readLog = (row: DecisionLogRow) => ({
  id: row.id,
  timestamp: row.timestamp,
  created_at: row.created_at,
  query: row.query,
  ...(row.user_key !== null && { user_key: row.user_key }),
  ...(row.resource_type !== null && { resource_type: row.resource_type }),
  ...(row.resource_key !== null && { resource_key: row.resource_key }),
  ...(row.tenant !== null && { tenant: row.tenant }),
  ...(row.action !== null && { action: row.action }),
  ...(row.decision !== null && { decision: row.decision === 1 }),
  ...(row.reason !== null && { reason: describeReason(fromJson(row.reason)) ?? row.reason }),
  org_id: row.organization_id,
  project_id: row.project_id,
  env_id: row.environment_id,
  pdp_config_id: row.pdp_id,
  revision: Number(row.revision),
  latency_us: row.latency_us,
  input: row.input === null && isCheck(row) ? checkInput(row) : fromJson(row.input),
  // A check's answer is its decision; only other queries store a result of their own.
  result: row.result === null && isCheck(row) ? { allow: row.decision === 1 } : fromJson(row.result),
});

const unixToTimestamp = (seconds: number | undefined) =>
  seconds === undefined ? undefined : toTimestamp(new Date(seconds * 1000));

/** Deletes decisions older than the retention; 0 days keeps them forever. Returns how many went. */
export async function purgeDecisionLogsOlderThan(
  db: Kysely<Database>,
  retentionDays: number,
  nowMs = Date.now(),
) {
  if (retentionDays <= 0) return 0;
  return purgeDecisionLogs(db, toTimestamp(new Date(nowMs - retentionDays * 86_400_000)));
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

export function createAuditLogsService(deps: {
  db: Kysely<Database>;
  dialect: Dialect;
  scope: ScopeService;
}) {
  const { db, dialect, scope } = deps;
  return {
    async list(principal: Principal, proj: string, env: string, q: AuditLogQueryInput, page: PageRequest) {
      const { environment } = await scope.environment(principal, proj, env, { access: "read" });
      const filter: DecisionLogFilter = {
        pdpId: q.pdp_id,
        users: q.users,
        decision: q.decision,
        resources: q.resources,
        tenant: q.tenant,
        action: q.action,
        from: unixToTimestamp(q.timestamp_from),
        to: unixToTimestamp(q.timestamp_to),
        query: q.query === "none" ? undefined : q.query,
      };
      const { rows, total } = await listDecisionLogs(
        db,
        environment.id,
        filter,
        offsetOf(page),
        page.perPage,
      );
      const result = envelope(rows.map(readLog), total, page);
      return { ...result, pagination_count: result.page_count };
    },

    async get(principal: Principal, proj: string, env: string, id: string) {
      const { environment } = await scope.environment(principal, proj, env, { access: "read" });
      const row = await findDecisionLog(db, environment.id, id);
      if (!row) throw notFound("decision log", id);
      return readLog(row);
    },

    /** Standalone PDPs ship their decisions here; the entries are bound to the path's environment. */
    async ingest(
      principal: Principal,
      proj: string,
      env: string,
      entries: Omit<DecisionLogEntry, "environment_id">[],
    ) {
      const { environment } = await scope.environment(principal, proj, env, { access: "read" });
      const bound = entries.map((e) => ({ ...e, environment_id: environment.id }));
      await insertDecisionLogs(db, dialect, JSON.stringify(bound));
      return { accepted: entries.length };
    },
  };
}

export type AuditLogsService = ReturnType<typeof createAuditLogsService>;
