import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "../helpers/process.ts";
import { describeEachDialect } from "../helpers/app.ts";

/** The metric names (and gatehouse_db_pool_connections, PostgreSQL only)  docs/grafana-dashboard.json reads; renaming one breaks the dashboard. */
const NAMES = [
  "gatehouse_http_requests_total",
  "gatehouse_http_request_duration_seconds_bucket",
  "gatehouse_http_request_duration_seconds_sum",
  "gatehouse_http_request_duration_seconds_count",
  "gatehouse_rate_limit_rejections_total",
  "gatehouse_api_log_queued",
  "gatehouse_api_log_dropped_total",
  "gatehouse_task_queue_tasks",
  "gatehouse_process_cpu_seconds_total",
  "gatehouse_process_resident_memory_bytes",
  "gatehouse_nodejs_eventloop_lag_p99_seconds",
];

describeEachDialect(
  "control plane /metrics",
  (env) => {
    test("Prometheus text with requests by route and status, latency, the pool, the task queue, the API log and the rate limiter", async () => {
      const { acme } = env();
      await env().call(acme.adminKey, "GET", "/v2/projects");
      await env().call(acme.adminKey, "GET", `/v2/projects/${acme.projectId}`);
      await env().call(null, "GET", "/v2/projects");
      // Over the limit of 3 a minute set for this suite.
      for (let i = 0; i < 4; i++) await env().call(acme.adminKey, "GET", "/v2/api-key/scope");

      const res = await env().app.inject({ method: "GET", url: "/metrics" });
      assert.equal(res.statusCode, 200, "no key needed");
      assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
      const text = res.body;
      const present = new Set(text.split("\n").map((line) => /^([a-z_0-9]+)[{ ]/.exec(line)?.[1]));
      for (const name of NAMES) assert.ok(present.has(name), `${name} is exported:\n${text}`);

      // The route pattern, not the path: one series for every project id.
      assert.match(
        text,
        /^gatehouse_http_requests_total\{method="GET",route="\/v2\/projects\/:proj_id",status_code="200"\} 1$/m,
      );
      assert.match(
        text,
        /^gatehouse_http_requests_total\{method="GET",route="\/v2\/projects",status_code="401"\} 1$/m,
      );
      assert.match(text, /^gatehouse_rate_limit_rejections_total [1-9]/m);
      assert.match(text, /^gatehouse_task_queue_tasks\{state="waiting"\} 0$/m);
      assert.match(text, /^gatehouse_api_log_dropped_total 0$/m);
      // Every control-plane metric the Grafana dashboard reads is exported (the PDP's come from its own port).
      const dashboard = fs.readFileSync(path.join(REPO_ROOT, "docs", "grafana-dashboard.json"), "utf8");
      for (const name of new Set(dashboard.match(/gatehouse_[a-z0-9_]+/g))) {
        if (name.startsWith("gatehouse_pdp_") || name === "gatehouse_db_pool_connections") continue;
        assert.ok(present.has(name), `the dashboard reads ${name}, which /metrics does not export`);
      }
      if (env().dialect === "postgres")
        assert.match(text, /^gatehouse_db_pool_connections\{state="total"\} [1-9]/m);
    });
  },
  { rateLimitPerMinute: 3 },
);
