import type { FastifyInstance, FastifyRequest } from "fastify";
import type { DecisionLogger } from "../runtime/decision-log.ts";
import type { DecisionSpoolStats } from "../runtime/decision-spool.ts";
import type { PdpDeps } from "./decide.ts";

type Status = ReturnType<PdpDeps["status"]>;
type EnvironmentStatus = Status["environments"][number];

/**
 * Liveness, readiness and Prometheus metrics. Without a key they give counts and aggregates only: an embedded PDP
 * holds the environments of every organization, and their ids are not for anyone who can reach the port. With
 * a key, /ready and /metrics add the environment that key selects (as a check with it would).
 */
export function registerHealthRoutes(app: FastifyInstance, deps: PdpDeps): void {
  const health = async () => ({ status: "ok" });
  app.get("/health", health);
  app.get("/healthy", health);
  app.get("/healthz", health);
  app.get("/ready", async (request, reply) => {
    const s = deps.status();
    const mine = await environmentsOfKey(deps, request, s);
    return reply.code(s.ready ? 200 : 503).send({
      status: s.ready ? "ready" : "not ready",
      environment_count: s.environments.length,
      ...(mine && { environments: mine }),
      ...(s.controlPlane && {
        control_plane: s.controlPlane.reachable ? "reachable" : "unreachable",
        last_sync_age_ms: s.controlPlane.lastSyncAgeMs,
      }),
    });
  });
  app.get("/metrics", async (request, reply) => {
    const s = deps.status();
    const lines = metricLines(s, (await environmentsOfKey(deps, request, s)) ?? [], deps.decisions);
    return reply.type("text/plain; version=0.0.4").send(lines.join("\n") + "\n");
  });
}

/** The environments a request's key selects (none held yet: empty); undefined without a key. */
async function environmentsOfKey(
  deps: PdpDeps,
  request: FastifyRequest,
  s: Status,
): Promise<EnvironmentStatus[] | undefined> {
  const authorization = request.headers.authorization;
  if (authorization === undefined) return undefined;
  const target = await deps.resolve(authorization, request);
  return s.environments.filter((e) => e.environmentId === target.environmentId);
}

const known = (e: EnvironmentStatus): e is EnvironmentStatus & { behind: number } =>
  e.behind !== undefined && e.behind !== null;

function gauge(name: string, help: string, values: (string | number)[]): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...values.map((v) => `${name}${v}`)];
}

/** The Prometheus text of /metrics, one line each; per-environment series only for `named`. */
function metricLines(s: Status, named: EnvironmentStatus[], decisions: DecisionLogger): string[] {
  const label = (e: EnvironmentStatus) => `{environment_id="${e.environmentId}"}`;
  const maxLag = Math.max(0, ...s.environments.map((e) => e.lagMs));
  // Unknown for one environment (its control plane is unreachable): unknown in total, so no line.
  const behind = s.environments.every(known) ? s.environments.reduce((n, e) => n + e.behind, 0) : undefined;
  return [
    ...gauge("gatehouse_pdp_environments", "Environments the PDP holds in memory.", [
      ` ${s.environments.length}`,
    ]),
    ...gauge(
      "gatehouse_pdp_sync_lag_max_seconds",
      "The longest any environment the PDP holds may have missed writes.",
      [` ${(maxLag / 1000).toFixed(3)}`],
    ),
    ...gauge(
      "gatehouse_pdp_revisions_behind_total",
      "Revisions the control plane has that the PDP has not applied yet, over every environment it holds.",
      behind === undefined ? [] : [` ${behind}`],
    ),
    ...gauge(
      "gatehouse_pdp_revision",
      "Environment revision the PDP holds (the environment of the scrape's key).",
      named.map((e) => `${label(e)} ${e.revision}`),
    ),
    ...gauge(
      "gatehouse_pdp_sync_lag_seconds",
      "How long the PDP may have missed writes: 0 while it holds the head of its feed (the scrape key's environment).",
      named.map((e) => `${label(e)} ${(e.lagMs / 1000).toFixed(3)}`),
    ),
    ...gauge(
      "gatehouse_pdp_revisions_behind",
      "Revisions the control plane has that the PDP has not applied yet (the scrape key's environment).",
      named.filter(known).map((e) => `${label(e)} ${e.behind}`),
    ),
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
