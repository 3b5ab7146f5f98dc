import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Config } from "../../config.ts";
import type { Store } from "../../db/store.ts";
import { schedulePeriodic } from "../../lib/periodic.ts";
import { Type } from "typebox";
import { envOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  AuditLogModel,
  AuditLogPage,
  AuditLogParams,
  AuditLogQuery,
  DecisionLogIngest,
  DecisionLogIngestQuery,
  DecisionStats,
  DecisionStatsQuery,
} from "./decision-log.schemas.ts";
import { createDecisionLogService, purgeDecisionLogsOlderThan } from "./decision-log.service.ts";
import { openSqliteDecisionLogReader } from "../../domain/decision-log/sqlite-threads.ts";
import type { LogExport } from "../../domain/log-export/log-export.ts";

export const decisionLogRoutes: FastifyPluginAsyncTypebox<{
  store: Store;
  config: Pick<Config, "decisionLogRetentionDays">;
  logExport: LogExport;
}> = async (app, { store, config, logExport }) => {
  const reader = store.sqliteFile === undefined ? undefined : openSqliteDecisionLogReader(store.sqliteFile);
  if (reader) app.addHook("onClose", () => reader.destroy());
  const auditLogs = createDecisionLogService({
    db: store.db,
    readDb: reader ?? store.db,
    dialect: store.dialect,
    exported: logExport.decisions,
  });
  schedulePeriodic(
    app,
    "decision log purge",
    3_600_000,
    () => purgeDecisionLogsOlderThan(store.db, config.decisionLogRetentionDays),
    store.outage,
  );
  const tags = ["decision logs"];
  app.get(
    "/v2/pdps/:proj_id/:env_id/audit_logs",
    {
      schema: {
        tags,
        summary: "The environment's PDP decision log, newest first",
        params: EnvParams,
        querystring: AuditLogQuery,
        response: { 200: AuditLogPage, ...errorResponses(404) },
      },
    },
    (req) =>
      auditLogs.list(
        envOf(req),

        req.query,
        pageRequest(req.query),
      ),
  );
  app.get(
    "/v2/pdps/:proj_id/:env_id/decision_logs/stats",
    {
      schema: {
        tags,
        summary:
          "Checks per minute, allowed and denied (Gatehouse's own): the audit log's filters, over at most a week",
        params: EnvParams,
        querystring: DecisionStatsQuery,
        response: { 200: DecisionStats, ...errorResponses(404) },
      },
    },
    (req) => auditLogs.stats(envOf(req), req.query),
  );
  app.get(
    "/v2/pdps/:proj_id/:env_id/audit_logs/:log_id",
    {
      schema: {
        tags,
        summary: "One decision with its input, result and reason",
        params: AuditLogParams,
        response: { 200: AuditLogModel, ...errorResponses(404) },
      },
    },
    (req) => auditLogs.get(envOf(req), req.params.log_id),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/decision_logs",
    {
      schema: {
        tags,
        summary: "Ingest a batch of decisions from a standalone PDP",
        params: EnvParams,
        querystring: DecisionLogIngestQuery,
        body: DecisionLogIngest,
        response: { 200: Type.Object({ accepted: Type.Integer() }), ...errorResponses(404) },
      },
    },
    (req) => auditLogs.ingest(envOf(req), req.body, req.query.pdp_id),
  );
};
