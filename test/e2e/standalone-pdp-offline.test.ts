import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { httpOk, startPdpProcess, startServerProcess, type ServerProcess } from "../helpers/process.ts";

/**
 * A standalone PDP while its control plane is away: its decisions wait on disk (bounded, oldest dropped first,
 * counted) and reach the control plane's decision log when it is back, also across a restart of the PDP; /ready
 * and /metrics say that the control plane is unreachable and how long since it last answered.
 */

const BOOTSTRAP = "standalone-pdp-offline-bootstrap-key-0000";
const LOG = "/v2/pdps/default/production/audit_logs";

const api = httpOk;

async function check(pdp: ServerProcess, key: string, user: string): Promise<boolean> {
  const res = await fetch(`${pdp.baseUrl}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ user, action: "read", resource: { type: "document", tenant: "default" } }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).allow as boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const ready = async (pdp: ServerProcess, key: string): Promise<any> =>
  (await fetch(`${pdp.baseUrl}/ready`, { headers: { authorization: `Bearer ${key}` } })).json();

/** A line of the PDP's /metrics, scraped with the key (which adds its environment's series). */
async function metric(pdp: ServerProcess, name: string, key: string): Promise<number | undefined> {
  const text = await (
    await fetch(`${pdp.baseUrl}/metrics`, { headers: { authorization: `Bearer ${key}` } })
  ).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The decision log's entries of these users, by user, as the control plane lists them. */
async function logged(base: string, key: string, users: string[]): Promise<Map<string, string[]>> {
  const byUser = new Map<string, string[]>();
  for (let i = 0; i < users.length; i += 20) {
    const query = users
      .slice(i, i + 20)
      .map((u) => `users=${encodeURIComponent(u)}`)
      .join("&");
    const page = (await api(base, key, "GET", `${LOG}?${query}&per_page=100`)).json;
    assert.ok(page.total_count <= 100, "one page holds them all");
    for (const entry of page.data as { id: string; user_key: string }[]) {
      byUser.set(entry.user_key, [...(byUser.get(entry.user_key) ?? []), entry.id]);
    }
  }
  return byUser;
}

const names = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, "0")}`);

async function startControlPlane(dir: string, port?: number) {
  return startServerProcess(
    { GATEHOUSE_DATA_DIR: dir, GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP },
    [],
    port === undefined ? {} : { port },
  );
}

async function setUp(cp: ServerProcess): Promise<string> {
  const key = (await api(cp.baseUrl, BOOTSTRAP, "GET", "/v2/api-key/default/production")).json
    .secret as string;
  await api(cp.baseUrl, key, "POST", "/v2/schema/default/production/resources", {
    key: "document",
    name: "Document",
    actions: { read: {} },
  });
  await api(cp.baseUrl, key, "POST", "/v2/schema/default/production/roles", {
    key: "reader",
    name: "Reader",
    permissions: ["document:read"],
  });
  return key;
}

test("standalone PDP: decisions made while the control plane is away reach its log when it is back; /ready tells the truth", async () => {
  const cpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-cp-"));
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pdp-"));
  const procs: ServerProcess[] = [];
  try {
    const cp = await startControlPlane(cpDir);
    procs.push(cp);
    const key = await setUp(cp);
    const pdpEnv = {
      GATEHOUSE_DATA_DIR: pdpDir,
      GATEHOUSE_CONTROL_PLANE_URL: cp.baseUrl,
      GATEHOUSE_PDP_API_KEY: key,
    };
    const pdp = await startPdpProcess(pdpEnv);
    procs.push(pdp);

    // Up to date, the PDP is not behind, however long ago the last change was.
    const write = await api(cp.baseUrl, key, "POST", "/v2/facts/default/production/users", {
      key: "alice",
      role_assignments: [{ role: "reader", tenant: "default" }],
    });
    const revision = Number(write.headers.get("x-gatehouse-revision"));
    await until(
      "the PDP to hold the write",
      async () => (await ready(pdp, key)).environments[0].revision >= revision,
    );
    // The lag is not the time since the last change (which this wait makes at least 5 s).
    await new Promise((r) => setTimeout(r, 5000));
    const upToDate = await ready(pdp, key);
    assert.equal(upToDate.control_plane, "reachable");
    assert.equal(upToDate.environments[0].behind, 0);
    assert.ok(
      upToDate.environments[0].lagMs < 5000,
      `lag while up to date: ${upToDate.environments[0].lagMs} ms`,
    );
    assert.ok((await metric(pdp, "gatehouse_pdp_sync_lag_seconds", key))! < 5);
    assert.equal(await metric(pdp, "gatehouse_pdp_control_plane_up", key), 1);
    assert.equal(await check(pdp, key, "alice"), true);

    // The control plane goes away.
    assert.equal(await cp.stop(), 0, cp.output());
    const gapA = names("gap-a", 10);
    for (const user of gapA) assert.equal(await check(pdp, key, user), false);
    const away = await until("/ready to say the control plane is unreachable", async () => {
      const r = await ready(pdp, key);
      return r.control_plane === "unreachable" && r;
    });
    assert.equal(away.status, "ready");
    assert.equal(away.environments[0].behind, null);
    assert.equal(typeof away.last_sync_age_ms, "number");
    assert.equal(await metric(pdp, "gatehouse_pdp_control_plane_up", key), 0);
    assert.equal(await metric(pdp, "gatehouse_pdp_revisions_behind", key), undefined);
    await until(
      "the decisions on disk",
      async () => (await metric(pdp, "gatehouse_pdp_decision_log_spooled_total", key))! >= 10,
    );
    // Longer than the five seconds after which the decision log used to give its entries up.
    await until("a gap of 6 s", async () => (await ready(pdp, key)).last_sync_age_ms > 6000);
    assert.ok((await metric(pdp, "gatehouse_pdp_sync_lag_seconds", key))! > 6);
    assert.equal(await metric(pdp, "gatehouse_pdp_decision_log_dropped_total", key), 0);

    // The PDP restarts meanwhile. A write a crash cut short (never renamed) and a file the control plane will
    // refuse (not JSON) are in its spool: neither stops the others from shipping. A file an older version wrote
    // (no PDP in its name, the PDP and the time in each entry) ships as well.
    assert.equal(await pdp.stop(), 0, pdp.output());
    const spoolDir = path.join(pdpDir, "decision-log-spool");
    const spooled = fs.readdirSync(spoolDir);
    assert.ok(
      spooled.length > 0 && spooled.every((f) => /^\d{12}-\d+-[0-9a-f-]{36}\.json$/.test(f)),
      spooled.join(", "),
    );
    fs.writeFileSync(path.join(spoolDir, "000000000999-4.json.tmp"), '[{"id":"0190');
    fs.writeFileSync(path.join(spoolDir, "000000000000-2.json"), "not json");
    const olderMs = Date.now() - 60_000;
    const hex = olderMs.toString(16).padStart(12, "0");
    const olderId = `${hex.slice(0, 8)}-${hex.slice(8)}-7000-8000-000000000001`;
    const older = {
      id: olderId,
      timestamp: new Date(olderMs).toISOString().replace("Z", "+00:00"),
      pdp_id: "pdp-of-an-older-version",
      query: "check",
      user_key: "gap-older",
      action: "read",
      resource_type: "document",
      resource_key: null,
      tenant: "default",
      decision: false,
      reason: null,
      input: null,
      result: null,
      revision: 1,
      latency_us: 2,
    };
    fs.writeFileSync(path.join(spoolDir, "000000000001-1.json"), JSON.stringify([older]));
    const again = await startPdpProcess(pdpEnv);
    procs.push(again);
    assert.deepEqual(
      fs.readdirSync(spoolDir).filter((f) => f.endsWith(".tmp")),
      [],
    );
    assert.equal((await ready(again, key)).control_plane, "unreachable");
    const gapB = names("gap-b", 10);
    for (const user of gapB) assert.equal(await check(again, key, user), false);
    await until(
      "the new decisions on disk",
      async () => (await metric(again, "gatehouse_pdp_decision_log_spooled_total", key))! >= 10,
    );

    // The control plane comes back where the PDP looks for it, with the same database.
    const back = await startControlPlane(cpDir, cp.port);
    procs.push(back);
    const gap = [...gapA, ...gapB, "gap-older"];
    const arrived = await until("every decision of the gap in the log", async () => {
      const byUser = await logged(back.baseUrl, key, gap);
      return gap.every((u) => byUser.has(u)) && byUser;
    });
    for (const user of gap)
      assert.equal(arrived.get(user)?.length, 1, `${user}: ${arrived.get(user)?.join(", ")}`);
    await until(
      "the spool to empty",
      async () => (await metric(again, "gatehouse_pdp_decision_log_spool_entries", key)) === 0,
    );
    assert.equal(await metric(again, "gatehouse_pdp_decision_log_spool_dropped_total", key), 2);
    assert.ok((await metric(again, "gatehouse_pdp_decision_log_shipped_total", key))! >= 20);
    assert.deepEqual(fs.readdirSync(spoolDir), []);
    const olderEntry = (await api(back.baseUrl, key, "GET", `${LOG}/${olderId}`)).json;
    assert.equal(olderEntry.pdp_config_id, "pdp-of-an-older-version");
    assert.equal(olderEntry.timestamp, older.timestamp);
    const newer = (await api(back.baseUrl, key, "GET", `${LOG}/${arrived.get(gapB[0] as string)?.[0]}`)).json;
    assert.match(newer.pdp_config_id, /^[0-9a-f-]{36}$/, "a spooled chunk keeps the PDP that made it");
    const caughtUp = await until("/ready to say the control plane is back", async () => {
      const r = await ready(again, key);
      return r.control_plane === "reachable" && r;
    });
    assert.equal(caughtUp.environments[0].behind, 0);
  } finally {
    for (const p of procs) await p.stop("SIGKILL");
    fs.rmSync(cpDir, { recursive: true, force: true });
    fs.rmSync(pdpDir, { recursive: true, force: true });
  }
});

test("standalone PDP: past its size bound the spool drops the oldest decisions first, and counts them", async () => {
  const cpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-cp-"));
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pdp-"));
  const procs: ServerProcess[] = [];
  // A denied check's entry is a few hundred bytes: ten of them fit, thirty do not.
  const bound = 8000;
  try {
    const cp = await startControlPlane(cpDir);
    procs.push(cp);
    const key = await setUp(cp);
    const pdp = await startPdpProcess({
      GATEHOUSE_DATA_DIR: pdpDir,
      GATEHOUSE_CONTROL_PLANE_URL: cp.baseUrl,
      GATEHOUSE_PDP_API_KEY: key,
      GATEHOUSE_DECISION_LOG_SPOOL_BYTES: String(bound),
    });
    procs.push(pdp);
    assert.equal(await cp.stop(), 0, cp.output());
    await until(
      "/ready to say the control plane is unreachable",
      async () => (await ready(pdp, key)).control_plane === "unreachable",
    );

    // Three batches, each on disk before the next: the first ones go when the last ones come.
    const users = names("u", 30);
    for (let batch = 0; batch < 3; batch++) {
      for (const user of users.slice(batch * 10, batch * 10 + 10)) await check(pdp, key, user);
      const onDisk = async () => {
        const spooled = (await metric(pdp, "gatehouse_pdp_decision_log_spooled_total", key))!;
        const dropped = (await metric(pdp, "gatehouse_pdp_decision_log_spool_dropped_total", key))!;
        return spooled >= (batch + 1) * 10 && { spooled, dropped };
      };
      await until(`batch ${batch} on disk`, onDisk);
      assert.ok((await metric(pdp, "gatehouse_pdp_decision_log_spool_bytes", key))! <= bound);
    }
    const dropped = (await metric(pdp, "gatehouse_pdp_decision_log_spool_dropped_total", key))!;
    const pending = (await metric(pdp, "gatehouse_pdp_decision_log_spool_entries", key))!;
    assert.ok(dropped >= 10, `dropped: ${dropped}`);
    assert.equal(dropped + pending, 30);

    const back = await startControlPlane(cpDir, cp.port);
    procs.push(back);
    await until(
      "the spool to empty",
      async () => (await metric(pdp, "gatehouse_pdp_decision_log_spool_entries", key)) === 0,
    );
    const byUser = await logged(back.baseUrl, key, users);
    // What is missing is exactly the oldest `dropped` decisions; the rest arrived once each.
    assert.deepEqual(
      users.filter((u) => !byUser.has(u)),
      users.slice(0, dropped),
    );
    for (const user of users.slice(dropped)) assert.equal(byUser.get(user)?.length, 1, user);
    assert.equal(await metric(pdp, "gatehouse_pdp_decision_log_spool_dropped_total", key), dropped);
  } finally {
    for (const p of procs) await p.stop("SIGKILL");
    fs.rmSync(cpDir, { recursive: true, force: true });
    fs.rmSync(pdpDir, { recursive: true, force: true });
  }
});
