import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { principalOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { EnvParams, errorResponses } from "../../lib/schemas.ts";
import {
  AuditLogModel,
  AuditLogPage,
  AuditLogParams,
  AuditLogQuery,
  DecisionLogIngest,
} from "./audit-logs.schemas.ts";
import type { AuditLogsService } from "./audit-logs.service.ts";

export const auditLogsRoutes: FastifyPluginAsyncTypebox<{ auditLogs: AuditLogsService }> = async (
  app,
  { auditLogs },
) => {
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
        principalOf(req),
        req.params.proj_id,
        req.params.env_id,
        req.query,
        pageRequest(req.query),
      ),
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
    (req) => auditLogs.get(principalOf(req), req.params.proj_id, req.params.env_id, req.params.log_id),
  );
  app.post(
    "/v2/pdps/:proj_id/:env_id/decision_logs",
    {
      schema: {
        tags,
        summary: "Ingest a batch of decisions from a standalone PDP",
        params: EnvParams,
        body: DecisionLogIngest,
        response: { 200: Type.Object({ accepted: Type.Integer() }), ...errorResponses(404) },
      },
    },
    (req) =>
      auditLogs.ingest(
        principalOf(req),
        req.params.proj_id,
        req.params.env_id,
        req.body.map((e) => ({ ...e, query: e.query as never })),
      ),
  );
};
