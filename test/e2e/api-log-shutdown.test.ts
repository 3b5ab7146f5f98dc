import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Sqlite from "better-sqlite3";
import { startServerProcess } from "../helpers/process.ts";

test("a graceful stop right after a burst of calls leaves every call in the API log", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-log-"));
  const key = "api-log-shutdown-e2e-bootstrap-key-0123456789";
  try {
    const server = await startServerProcess(
      {
        GATEHOUSE_BOOTSTRAP_API_KEY: key,
        // Only the shutdown can write the log: the timer would not fire for ten minutes.
        GATEHOUSE_API_LOG_FLUSH_MS: "600000",
        DATABASE_URL: "",
        REDIS_URL: "",
      },
      ["--data-dir", dataDir, "--pdp-port", "0"],
    );
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const calls: { method: string; path: string; headers: Record<string, string>; body?: string }[] = [];
    for (let i = 0; i < 40; i++) {
      calls.push({ method: "GET", path: "/v2/projects", headers: auth });
      calls.push({ method: "GET", path: `/v2/projects/missing-${i}`, headers: auth });
      calls.push({ method: "GET", path: `/v2/projects/anonymous-${i}`, headers: {} });
      calls.push({
        method: "POST",
        path: "/v2/projects",
        headers: auth,
        body: JSON.stringify({ key: `p${i}` }),
      });
      calls.push({
        method: "POST",
        path: "/v2/projects",
        headers: auth,
        body: JSON.stringify({ key: `burst-${i}`, name: `Burst ${i}` }),
      });
    }
    const expected = await Promise.all(
      calls.map(async (c) => {
        const res = await fetch(`${server.baseUrl}${c.path}`, {
          method: c.method,
          headers: c.headers,
          ...(c.body !== undefined && { body: c.body }),
        });
        await res.arrayBuffer();
        return `${c.method} ${c.path} ${res.status}`;
      }),
    );
    assert.equal(await server.stop("SIGTERM"), 0, server.output());

    const statuses = new Set(expected.map((e) => e.split(" ")[2]));
    assert.deepEqual([...statuses].sort(), ["200", "401", "404", "422"]);
    const db = new Sqlite(path.join(dataDir, "gatehouse.db"), { readonly: true });
    try {
      const rows = db.prepare("select method, path, status from api_log").all() as {
        method: string;
        path: string;
        status: number;
      }[];
      assert.deepEqual(rows.map((r) => `${r.method} ${r.path} ${r.status}`).sort(), [...expected].sort());
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
