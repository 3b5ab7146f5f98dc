import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Sqlite from "better-sqlite3";
import pg from "pg";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/process.ts";
import { DIALECTS, freshDatabase } from "../helpers/stores.ts";
import { api, check, receiver, seedReaders, until } from "../helpers/export.ts";

const BOOTSTRAP = "log-export-e2e-bootstrap-key-00000000000000";

/** The ids the database holds: API log records and decisions. */
async function storedIds(dialect: string, dataDir: string, databaseUrl: string) {
  let api: { id: string }[];
  let chunks: { entries: string }[];
  if (dialect === "sqlite") {
    const db = new Sqlite(path.join(dataDir, "gatehouse.db"), { readonly: true });
    api = db.prepare("select id from api_log").all() as { id: string }[];
    chunks = db.prepare("select entries from decision_log_chunks").all() as { entries: string }[];
    db.close();
  } else {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    api = (await client.query("select id from api_log")).rows;
    chunks = (await client.query("select entries from decision_log_chunks")).rows;
    await client.end();
  }
  const decisions = chunks.flatMap((c) => (JSON.parse(c.entries) as { id: string }[]).map((e) => e.id));
  return { api: api.map((r) => r.id).sort(), decisions: decisions.sort() };
}

/** A figure of /metrics for the http sink. */
async function metric(server: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{sink="http"}`));
  return line === undefined ? NaN : Number(line.split(" ")[1]);
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `log export over HTTP: a receiver outage and a Gatehouse restart in between lose nothing [${dialect}]`,
    { skip, timeout: 300_000 },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-export-"));
      const database = await freshDatabase(dialect);
      const port = await freePort();
      const sink = receiver(port);
      const settings = {
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
        GATEHOUSE_OPA_PORT: "0",
        GATEHOUSE_LOG_EXPORT_HTTP_URL: `http://127.0.0.1:${port}/ingest`,
        GATEHOUSE_LOG_EXPORT_HTTP_HEADERS: "authorization=Bearer%20sink-token",
        GATEHOUSE_LOG_EXPORT_FLUSH_MS: "100",
        ...database.settings,
      };
      const servers: ServerProcess[] = [];
      const start = async () => {
        const s = await startServerProcess(settings, [], { pdp: true });
        servers.push(s);
        return s;
      };
      const exported = () =>
        sink.received.flatMap((r) =>
          r.body
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { log: string; id: string }),
        );
      const idsOf = (log: string) =>
        [
          ...new Set(
            exported()
              .filter((r) => r.log === log)
              .map((r) => r.id),
          ),
        ].sort();
      try {
        await sink.start();
        let server = await start();
        const pdpBase = () => `http://127.0.0.1:${server.pdpPort}`;
        const envSecret = await seedReaders(server, BOOTSTRAP, ["alice", "bob"], "reader@example.test");
        for (let i = 0; i < 5; i++) assert.equal(await check(pdpBase(), envSecret, "alice"), true);
        await until(() => idsOf("decision").length === 5, "the first decisions never arrived");

        // The receiver goes away: what follows waits, then (at the stop) goes to the spool on disk.
        await sink.stop();
        for (let i = 0; i < 10; i++) await check(pdpBase(), envSecret, i % 2 ? "bob" : "carol");
        for (let i = 0; i < 5; i++) await api(server, BOOTSTRAP, "GET", `/v2/projects?page=${i + 1}`);
        await until(
          async () => (await metric(server, "gatehouse_log_export_failures_total")) > 0,
          "no failure",
        );
        assert.ok((await metric(server, "gatehouse_log_export_queued")) > 0);
        assert.ok((await metric(server, "gatehouse_log_export_lag_seconds")) > 0);
        assert.equal(await server.stop(), 0, server.output());
        assert.ok(fs.readdirSync(path.join(dataDir, "log-export", "http")).length > 0, "nothing spooled");

        // Back with the receiver still away for a moment, then up: the spool is shipped.
        server = await start();
        await new Promise((r) => setTimeout(r, 500));
        await sink.start();
        for (let i = 0; i < 3; i++) await check(pdpBase(), envSecret, "alice");
        await until(async () => (await metric(server, "gatehouse_log_export_queued")) === 0, "still queued");
        await until(() => idsOf("decision").length >= 18, "the decisions after the restart never arrived");
        assert.equal(await metric(server, "gatehouse_log_export_dropped_total"), 0);
        assert.equal(await server.stop(), 0, server.output());

        // Every record the database holds was exported, and nothing else.
        const stored = await storedIds(dialect, dataDir, database.settings["DATABASE_URL"] ?? "");
        assert.equal(stored.decisions.length, 18);
        assert.deepEqual(idsOf("decision"), stored.decisions);
        assert.deepEqual(idsOf("api"), stored.api);
        assert.ok(stored.api.length > 10);
        assert.ok(
          sink.received.every((r) => r.contentType === "application/x-ndjson" && r.path === "/ingest"),
        );
        const text = sink.received.map((r) => r.body).join("");
        assert.ok(!text.includes(BOOTSTRAP) && !text.includes(envSecret), "a key in the exported records");
      } finally {
        for (const s of servers) if (s.child.exitCode === null) s.child.kill("SIGKILL");
        await sink.stop();
        await database.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
}
