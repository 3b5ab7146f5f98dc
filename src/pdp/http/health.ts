import type { FastifyInstance } from "fastify";
import type { DecisionLogger } from "../runtime/decision-log.ts";
import type { DecisionSpoolStats } from "../runtime/decision-spool.ts";
import type { PdpDeps } from "./decide.ts";

// Health, readiness and Prometheus metrics of the PDP's own port.

/** Liveness, readiness and Prometheus metrics. */
export function registerHealthRoutes(app: FastifyInstance, deps: PdpDeps): void {
  const health = async () => ({ status: "ok" });
  app.get("/health", health);
  app.get("/healthy", health);
  app.get("/healthz", health);
  app.get("/ready", async (_req, reply) => {
    const s = deps.status();
    return reply.code(s.ready ? 200 : 503).send({
      status: s.ready ? "ready" : "not ready",
      environments: s.environments,
      ...(s.controlPlane && {
        control_plane: s.controlPlane.reachable ? "reachable" : "unreachable",
        last_sync_age_ms: s.controlPlane.lastSyncAgeMs,
      }),
    });
  });
  app.get("/metrics", async (_req, reply) => {
    const lines = metricLines(deps.status(), deps.decisions);
    return reply.type("text/plain; version=0.0.4").send(lines.join("\n") + "\n");
  });
}

/** The Prometheus text of /metrics, one line each. */
function metricLines(s: ReturnType<PdpDeps["status"]>, decisions: DecisionLogger): string[] {
  return [
    "# HELP gatehouse_pdp_revision Environment revision the PDP holds.",
    "# TYPE gatehouse_pdp_revision gauge",
    ...s.environments.map((e) => `gatehouse_pdp_revision{environment_id="${e.environmentId}"} ${e.revision}`),
    "# HELP gatehouse_pdp_sync_lag_seconds How long the PDP may have missed writes: 0 while it holds the head of its feed.",
    "# TYPE gatehouse_pdp_sync_lag_seconds gauge",
    ...s.environments.map(
      (e) =>
        `gatehouse_pdp_sync_lag_seconds{environment_id="${e.environmentId}"} ${(e.lagMs / 1000).toFixed(3)}`,
    ),
    "# HELP gatehouse_pdp_revisions_behind Revisions the control plane has that the PDP has not applied yet.",
    "# TYPE gatehouse_pdp_revisions_behind gauge",
    ...s.environments
      .filter((e) => e.behind !== undefined && e.behind !== null)
      .map((e) => `gatehouse_pdp_revisions_behind{environment_id="${e.environmentId}"} ${e.behind}`),
    "# HELP gatehouse_pdp_decision_log_dropped_total Decision log entries dropped.",
    "# TYPE gatehouse_pdp_decision_log_dropped_total counter",
    `gatehouse_pdp_decision_log_dropped_total ${decisions.dropped}`,
    "# HELP gatehouse_pdp_decision_log_queued Decision log entries recorded and not yet stored.",
    "# TYPE gatehouse_pdp_decision_log_queued gauge",
    `gatehouse_pdp_decision_log_queued ${decisions.queued}`,
    ...(s.controlPlane ? controlPlaneMetrics(s.controlPlane) : []),
    ...(s.decisionLogSpool ? spoolMetrics(s.decisionLogSpool) : []),
  ];
}

function controlPlaneMetrics(cp: { reachable: boolean; lastSyncAgeMs: number | null }): string[] {
  return [
    "# HELP gatehouse_pdp_control_plane_up Whether the standalone PDP's last request to its control plane succeeded.",
    "# TYPE gatehouse_pdp_control_plane_up gauge",
    `gatehouse_pdp_control_plane_up ${cp.reachable ? 1 : 0}`,
    ...(cp.lastSyncAgeMs === null
      ? []
      : [
          "# HELP gatehouse_pdp_last_sync_age_seconds Time since the control plane last answered the PDP.",
          "# TYPE gatehouse_pdp_last_sync_age_seconds gauge",
          `gatehouse_pdp_last_sync_age_seconds ${(cp.lastSyncAgeMs / 1000).toFixed(3)}`,
        ]),
  ];
}

function spoolMetrics(spool: DecisionSpoolStats): string[] {
  const metric = (name: string, type: string, help: string, value: number) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    `${name} ${value}`,
  ];
  return [
    ...metric(
      "gatehouse_pdp_decision_log_spooled_total",
      "counter",
      "Decision log entries written to disk while the control plane could not take them.",
      spool.spooled,
    ),
    ...metric(
      "gatehouse_pdp_decision_log_spool_dropped_total",
      "counter",
      "Decision log entries given up: the oldest on disk past the size bound, or refused by the control plane.",
      spool.dropped,
    ),
    ...metric(
      "gatehouse_pdp_decision_log_shipped_total",
      "counter",
      "Decision log entries the control plane accepted.",
      spool.shipped,
    ),
    ...metric(
      "gatehouse_pdp_decision_log_spool_entries",
      "gauge",
      "Decision log entries on disk waiting for the control plane.",
      spool.pendingEntries,
    ),
    ...metric(
      "gatehouse_pdp_decision_log_spool_bytes",
      "gauge",
      "Bytes of decision log on disk waiting for the control plane.",
      spool.pendingBytes,
    ),
  ];
}
