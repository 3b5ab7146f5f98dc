import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ExportSinkStats } from "../domain/log-export/log-export.ts";

/** Where the gauges read their values when /metrics is scraped. */
export interface MetricsOptions {
  /** The PostgreSQL pool (undefined for SQLite). */
  pool(): { total: number; idle: number; waiting: number } | undefined;
  apiLog(): { queued: number; dropped: number };
  tasks(): Promise<{ running: number; waiting: number }>;
  logExport(): ExportSinkStats[];
}

/** The process's own figures (CPU, memory, event loop, garbage collection): one registry per process. */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: "gatehouse_" });
  }
  return processRegistry;
}

/**
 * Prometheus metrics of the control plane on `GET /metrics` (prom-client; no key, like the PDP's /metrics: keep
 * the port private or filter the path). Requests are counted by method, route (the pattern, so ids do not make new
 * series) and status; the rest is read when scraped. The PDP ports keep their own /metrics.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance, opts: MetricsOptions) => {
    const registry = new Registry();
    const labelNames = ["method", "route", "status_code"] as const;
    const requests = new Counter({
      name: "gatehouse_http_requests_total",
      help: "HTTP requests answered by the control plane, by method, route and status.",
      labelNames,
      registers: [registry],
    });
    const duration = new Histogram({
      name: "gatehouse_http_request_duration_seconds",
      help: "Time from a request's arrival to its response, by method, route and status.",
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    const rateLimited = new Counter({
      name: "gatehouse_rate_limit_rejections_total",
      help: "Requests refused by the rate limiter (429).",
      registers: [registry],
    });
    new Gauge({
      name: "gatehouse_db_pool_connections",
      help: "PostgreSQL pool connections by state (total, idle) and queries waiting for one (waiting).",
      labelNames: ["state"],
      registers: [registry],
      collect() {
        const pool = opts.pool();
        if (!pool) return;
        for (const state of ["total", "idle", "waiting"] as const) this.set({ state }, pool[state]);
      },
    });
    new Gauge({
      name: "gatehouse_api_log_queued",
      help: "API log records waiting to be written.",
      registers: [registry],
      collect() {
        this.set(opts.apiLog().queued);
      },
    });
    new Counter({
      name: "gatehouse_api_log_dropped_total",
      help: "API log records dropped (queue full, or a batch that could not be written).",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(opts.apiLog().dropped);
      },
    });
    new Gauge({
      name: "gatehouse_task_queue_tasks",
      help: "Unfinished background tasks (environment copies): running (a worker holds it) or waiting.",
      labelNames: ["state"],
      registers: [registry],
      async collect() {
        const tasks = await opts.tasks();
        this.set({ state: "running" }, tasks.running);
        this.set({ state: "waiting" }, tasks.waiting);
      },
    });

    logExportMetrics(registry, opts.logExport);

    app.addHook("onResponse", (request, reply, done) => {
      const labels = {
        method: request.method,
        // Unmatched paths share one series.
        route: request.routeOptions.url ?? "(unmatched)",
        status_code: String(reply.statusCode),
      };
      requests.inc(labels);
      duration.observe(labels, reply.elapsedTime / 1000);
      if (reply.statusCode === 429) rateLimited.inc();
      done();
    });

    app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
      const text = (await processMetrics().metrics()) + (await registry.metrics());
      return reply.type(registry.contentType).send(text);
    });
  },
  { name: "metrics" },
);

/** Log export, per sink (file, http, otlp): what waits and for how long, what went, what failed and was dropped. */
function logExportMetrics(registry: Registry, stats: () => ExportSinkStats[]): void {
  const figures = [
    [
      "gatehouse_log_export_lag_seconds",
      "Seconds the oldest exported record still waiting has waited.",
      "lagSeconds",
      Gauge,
    ],
    [
      "gatehouse_log_export_queued",
      "Exported records waiting, in memory and in the spool on disk.",
      "queued",
      Gauge,
    ],
    ["gatehouse_log_export_spool_bytes", "Bytes of the log export spool on disk.", "spoolBytes", Gauge],
    ["gatehouse_log_export_shipped_total", "Exported records the sink took.", "shipped", Counter],
    [
      "gatehouse_log_export_failures_total",
      "Shipments to the sink that failed (retried from the spool).",
      "failures",
      Counter,
    ],
    [
      "gatehouse_log_export_dropped_total",
      "Exported records dropped: spool or queue full, or refused by the sink.",
      "dropped",
      Counter,
    ],
  ] as const;
  for (const [name, help, field, Metric] of figures) {
    const metric: Gauge | Counter = new Metric({
      name,
      help,
      labelNames: ["sink"],
      registers: [registry],
      collect() {
        metric.reset();
        for (const s of stats()) {
          if (metric instanceof Gauge) metric.set({ sink: s.sink }, s[field]);
          else metric.inc({ sink: s.sink }, s[field]);
        }
      },
    });
  }
}
