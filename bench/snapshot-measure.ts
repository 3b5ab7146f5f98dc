/**
 * Measures a standalone PDP's start on a large environment: seeds `--facts` facts (users, tenants, resource
 * instances, role assignments, relationship tuples) straight into a SQLite file, then times the control plane's
 * snapshot route (first byte, total, bytes, the server's peak RSS) and a `gatehouse pdp` start against it (time to
 * ready, peak RSS, RSS after). Usage: node --import tsx bench/snapshot-measure.ts [facts] [dataDir]
 * A dataDir already seeded is reused.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Sqlite from "better-sqlite3";
import { freePort, sleep } from "./lib/procs.ts";

const BOOT = "snapshot-measure-bootstrap-key-00000000000";
const facts = Number(process.argv[2] ?? 1_000_000);
const dataDir = process.argv[3] ?? path.join(os.tmpdir(), `gatehouse-snap-${facts}`);

function start(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", `${process.env["SNAP_SRC"] ?? "src"}/main.ts`, ...args],
    {
      env: {
        ...process.env,
        GATEHOUSE_HOST: "127.0.0.1",
        GATEHOUSE_OPA_PORT: "0",
        GATEHOUSE_LOG_LEVEL: "warn",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  child.on("exit", (code) => code && code !== 0 && console.error(`exit ${code}: ${out.slice(-2000)}`));
  return child;
}

const status = (pid: number | undefined, field: string) => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Math.round(Number(m[1]) / 1024) : -1;
};

async function until(url: string, ok: (r: Response) => Promise<boolean>, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      if (await ok(r)) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} not ready`);
    await sleep(100);
  }
}

async function call(base: string, key: string, method: string, p: string, body?: unknown) {
  const r = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return JSON.parse(text);
}

async function serve() {
  const port = await freePort();
  const child = start(["serve"], {
    GATEHOUSE_API_PORT: String(port),
    GATEHOUSE_PDP_PORT: "0",
    GATEHOUSE_DATA_DIR: dataDir,
    DATABASE_URL: "",
    GATEHOUSE_BOOTSTRAP_API_KEY: BOOT,
    GATEHOUSE_RATE_LIMIT_PER_MINUTE: "1000000000",
  });
  const base = `http://127.0.0.1:${port}`;
  await until(`${base}/readyz`, async (r) => r.ok);
  return { child, base };
}

/** users = assignments = 3/10, instances = tuples = 2/10 of the facts, 1,000 tenants. */
function seed(file: string, envKey: string) {
  const db = new Sqlite(file);
  const env = db
    .prepare("select id, organization_id, project_id from environments where key = ?")
    .get(envKey) as {
    id: string;
    organization_id: string;
    project_id: string;
  };
  const scope = [env.organization_id, env.project_id, env.id];
  const id = (table: string, where: string) =>
    (
      db.prepare(`select id from ${table} where environment_id = ? and ${where}`).get(env.id) as {
        id: string;
      }
    ).id;
  const reader = id("roles", "key = 'reader'");
  const folder = id("resources", "key = 'folder'");
  const parent = id("relations", "key = 'parent'");
  const users = Math.round(facts * 0.3);
  const instances = Math.round(facts * 0.2);
  const at = "2026-01-01T00:00:00.000+00:00";
  const series = (n: number) =>
    `(with recursive s(i) as (select 0 union all select i + 1 from s where i < ${n - 1}) select i from s)`;
  db.exec("begin");
  db.prepare(
    `insert into tenants (id, organization_id, project_id, environment_id, key, name, attributes, created_at, updated_at, last_action_at)
     select 'tn' || printf('%08d', i), ?, ?, ?, 't' || i, 'T' || i, '{"tier":"gold"}', '${at}', '${at}', '${at}' from ${series(1000)}`,
  ).run(...scope);
  db.prepare(
    `insert into users (id, organization_id, project_id, environment_id, key, email, first_name, last_name, attributes, created_at, updated_at)
     select 'us' || printf('%010d', i), ?, ?, ?, 'user-' || i, 'user-' || i || '@example.com', 'First', 'Last', '{"plan":"pro"}', '${at}', '${at}' from ${series(users)}`,
  ).run(...scope);
  db.prepare(
    `insert into role_assignments (id, organization_id, project_id, environment_id, user_id, role_id, tenant_id, resource_instance_id, created_at)
     select 'ra' || printf('%010d', i), ?, ?, ?, 'us' || printf('%010d', i), ?, 'tn' || printf('%08d', i % 1000), null, '${at}' from ${series(users)}`,
  ).run(...scope, reader);
  db.prepare(
    `insert into resource_instances (id, organization_id, project_id, environment_id, resource_id, tenant_id, key, attributes, created_at, updated_at)
     select 'ri' || printf('%010d', i), ?, ?, ?, ?, 'tn' || printf('%08d', i % 1000), 'f' || i, '{}', '${at}', '${at}' from ${series(instances)}`,
  ).run(...scope, folder);
  db.prepare(
    `insert into relationship_tuples (id, organization_id, project_id, environment_id, subject_id, relation_id, object_id, tenant_id, created_at, updated_at)
     select 'rt' || printf('%010d', i), ?, ?, ?, 'ri' || printf('%010d', i / 2), ?, 'ri' || printf('%010d', i), 'tn' || printf('%08d', i % 1000), '${at}', '${at}' from ${series(instances)} where i > 0
     union all select 'rt0000000000', ?, ?, ?, 'ri0000000001', ?, 'ri0000000000', 'tn00000000', '${at}', '${at}'`,
  ).run(...scope, parent, ...scope, parent);
  db.exec("commit; analyze");
  db.close();
}

async function main() {
  const file = path.join(dataDir, "gatehouse.db");
  if (!fs.existsSync(path.join(dataDir, ".seeded"))) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.mkdirSync(dataDir, { recursive: true });
    const { child, base } = await serve();
    const S = "/v2/schema/default/production";
    await call(base, BOOT, "POST", `${S}/resources`, {
      key: "folder",
      name: "Folder",
      actions: { read: {} },
    });
    await call(base, BOOT, "POST", `${S}/resources/folder/relations`, {
      key: "parent",
      name: "Parent",
      subject_resource: "folder",
    });
    await call(base, BOOT, "POST", `${S}/roles`, {
      key: "reader",
      name: "Reader",
      permissions: ["folder:read"],
    });
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    const t0 = Date.now();
    seed(file, "production");
    fs.writeFileSync(path.join(dataDir, ".seeded"), "");
    console.log(`seeded ${facts} facts in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const { child, base } = await serve();
  const key = (await call(base, BOOT, "GET", "/v2/api-key/default/production")).secret as string;
  const hwm0 = status(child.pid, "VmHWM");
  const t0 = performance.now();
  const res = await fetch(`${base}/v2/pdp-sync/default/production/snapshot`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const ttfb = performance.now() - t0;
  let bytes = 0;
  for await (const chunk of res.body!) bytes += (chunk as Uint8Array).byteLength;
  const total = performance.now() - t0;
  console.log(
    `snapshot: status ${res.status} ${res.headers.get("content-type")}, ${(bytes / 1e6).toFixed(1)} MB, ` +
      `first byte ${(ttfb / 1000).toFixed(2)} s, total ${(total / 1000).toFixed(2)} s, ` +
      `server peak RSS ${hwm0} -> ${status(child.pid, "VmHWM")} MB, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
  );
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-snap-pdp-"));
  const port = await freePort();
  const t1 = performance.now();
  const pdp = start(["pdp"], {
    GATEHOUSE_PDP_PORT: String(port),
    GATEHOUSE_DATA_DIR: pdpDir,
    GATEHOUSE_CONTROL_PLANE_URL: base,
    GATEHOUSE_PDP_API_KEY: key,
  });
  await until(`http://127.0.0.1:${port}/ready`, async (r) => r.ok && (await r.json()).status === "ready");
  const ready = performance.now() - t1;
  const peak = status(pdp.pid, "VmHWM");
  await sleep(3000);
  const check = await fetch(`http://127.0.0.1:${port}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      user: { key: "user-7" },
      action: "read",
      resource: { type: "folder", tenant: "t7" },
    }),
  });
  const allow = (await check.json()).allow;
  console.log(
    `pdp: ready in ${(ready / 1000).toFixed(2)} s, peak RSS ${peak} MB, RSS 3 s after ${status(pdp.pid, "VmRSS")} MB, ` +
      `user-7 allowed ${allow}, disk ${fs.readdirSync(pdpDir).join(",")}, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
  );
  pdp.kill("SIGTERM");
  child.kill("SIGTERM");
  await Promise.all([new Promise((r) => pdp.once("exit", r)), new Promise((r) => child.once("exit", r))]);
  fs.rmSync(pdpDir, { recursive: true, force: true });
  if (allow !== true) process.exitCode = 1;
}

await main();
