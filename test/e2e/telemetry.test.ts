import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, startServerProcess } from "../helpers/process.ts";
import { api, check, receiver, seedReaders, until } from "../helpers/export.ts";

const BOOTSTRAP = "telemetry-e2e-bootstrap-key-000000000000000";
/** In every user's e-mail: a value that travels as a body field and a SQL parameter, never in a trace. */
const CANARY = "canary-7f3a9c";
const INVITE_CODE = "invite-code-9d2e41b7";

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  kvlistValue?: { values: KeyValue[] };
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: KeyValue[];
}

/** An OTLP/JSON value as plain JSON. */
function plain(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.kvlistValue) return fields(value.kvlistValue.values);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}
const fields = (list: KeyValue[] = []) => Object.fromEntries(list.map((kv) => [kv.key, plain(kv.value)]));

test(
  "OTLP: exported logs and traces reach a real OTLP/HTTP receiver, with their content and without secrets",
  { timeout: 240_000 },
  async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-otlp-"));
    const port = await freePort();
    const collector = receiver(port);
    await collector.start();
    const server = await startServerProcess(
      {
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
        GATEHOUSE_OPA_PORT: "0",
        DATABASE_URL: "",
        GATEHOUSE_LOG_EXPORT_OTLP: "on",
        GATEHOUSE_LOG_EXPORT_FLUSH_MS: "100",
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "gatehouse-e2e",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
      [],
      { pdp: true },
    );
    try {
      const pdpBase = `http://127.0.0.1:${server.pdpPort}`;
      // A dashboard link with a one-time code in its path.
      await (
        await fetch(`${server.baseUrl}/invite/${INVITE_CODE}`, { headers: { accept: "text/html" } })
      ).text();
      const envSecret = await seedReaders(server, BOOTSTRAP, ["alice"], `${CANARY}@example.test`);
      assert.equal(await check(pdpBase, envSecret, "alice"), true);
      assert.equal(await check(pdpBase, envSecret, "alice", "delete"), false);
      await api(server, BOOTSTRAP, "GET", "/v2/projects");

      const payloads = (p: string) => collector.received.filter((r) => r.path === p);
      const logRecords = () =>
        payloads("/v1/logs").flatMap((r) =>
          (
            JSON.parse(r.body).resourceLogs as {
              resource: { attributes: KeyValue[] };
              scopeLogs: { logRecords: { body: AnyValue; attributes: KeyValue[]; severityText: string }[] }[];
            }[]
          ).flatMap((rl) =>
            rl.scopeLogs.flatMap((sl) =>
              sl.logRecords.map((lr) => ({
                resource: fields(rl.resource.attributes),
                attributes: fields(lr.attributes),
                severity: lr.severityText,
                body: plain(lr.body) as Record<string, unknown>,
              })),
            ),
          ),
        );
      const spans = () =>
        payloads("/v1/traces").flatMap((r) =>
          (
            JSON.parse(r.body).resourceSpans as {
              resource: { attributes: KeyValue[] };
              scopeSpans: { spans: Span[] }[];
            }[]
          ).flatMap((rs) =>
            rs.scopeSpans.flatMap((ss) =>
              ss.spans.map((s) => ({
                ...s,
                resource: fields(rs.resource.attributes),
                attrs: fields(s.attributes),
              })),
            ),
          ),
        );
      await until(
        () =>
          logRecords().filter((r) => r.body["log"] === "decision").length >= 2 &&
          logRecords().some((r) => r.body["path"] === "/v2/projects") &&
          spans().some((s) => s.name === "pdp.check"),
        "the receiver never got the decisions, the API calls and the traces",
      );

      // Logs: one record per decision and per API call, their fields in the body, the log named in an attribute.
      const decisions = logRecords().filter((r) => r.attributes["gatehouse.log"] === "decision");
      assert.deepEqual(
        decisions.map((d) => [d.body["user_key"], d.body["action"], d.body["decision"]]).sort(),
        [
          ["alice", "delete", false],
          ["alice", "read", true],
        ],
      );
      assert.equal(decisions[0]!.resource["service.name"], "gatehouse-e2e");
      assert.match(String(decisions[0]!.body["timestamp"]), /^\d{4}-/);
      const calls = logRecords().filter((r) => r.attributes["gatehouse.log"] === "api");
      const keyCreation = calls.find((c) => c.body["path"] === "/v2/api-key");
      assert.ok(keyCreation, "the API key's creation is not in the exported API log");
      assert.equal(keyCreation.body["status"], 200);
      assert.equal(keyCreation.severity, "INFO");

      // Traces: a span per request named by its route, the statements and the decisions within it.
      const all = spans();
      const byId = new Map(all.map((s) => [s.spanId, s]));
      const userWrite = all.find((s) => s.name === "POST /v2/facts/:proj_id/:env_id/users");
      assert.ok(
        userWrite,
        `no span for the users write among ${[...new Set(all.map((s) => s.name))].join(", ")}`,
      );
      assert.equal(userWrite.attrs["http.route"], "/v2/facts/:proj_id/:env_id/users");
      assert.equal(userWrite.attrs["http.response.status_code"], 201);
      assert.equal(userWrite.resource["service.name"], "gatehouse-e2e");
      const statements = all.filter(
        (s) => s.parentSpanId === userWrite.spanId && s.attrs["db.system.name"] === "sqlite",
      );
      assert.ok(
        statements.some((s) => s.name === "INSERT"),
        "no INSERT statement within the users write",
      );
      assert.ok(statements.every((s) => typeof s.attrs["db.query.text"] === "string"));
      const checks = all.filter((s) => s.name === "pdp.check");
      assert.deepEqual(checks.map((s) => s.attrs["gatehouse.pdp.decision"]).sort(), ["allow", "deny"]);
      for (const s of checks) {
        const parent = byId.get(s.parentSpanId ?? "");
        assert.equal(parent?.name, "POST /allowed", "a decision outside its request's span");
        assert.equal(s.attrs["gatehouse.pdp.resource_type"], "document");
      }

      // No secret anywhere: the keys (bootstrap and the environment's), a value sent as a body field and bound as a
      // SQL parameter (traces carry neither bodies nor parameters).
      const traces = payloads("/v1/traces")
        .map((r) => r.body)
        .join("\n");
      const logs = payloads("/v1/logs")
        .map((r) => r.body)
        .join("\n");
      for (const secret of [BOOTSTRAP, envSecret]) {
        assert.ok(!traces.includes(secret) && !logs.includes(secret), "a key in the exported telemetry");
      }
      assert.ok(!traces.includes(CANARY), "a body field or SQL parameter in a trace");
      assert.ok(!traces.includes(INVITE_CODE), "a path's one-time code in a trace");
      assert.ok(all.some((s) => s.name === "GET" || s.attrs["http.route"] !== undefined));
      assert.ok(logs.includes(CANARY), "the API log's bodies were expected in the exported logs");
      assert.equal(await server.stop(), 0, server.output());
    } finally {
      if (server.child.exitCode === null) server.child.kill("SIGKILL");
      await collector.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
