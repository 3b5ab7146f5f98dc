import http from "node:http";
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { httpOk, startPdpProcess, startServerProcess, type ServerProcess } from "../helpers/process.ts";

const BOOTSTRAP = "standalone-pdp-e2e-bootstrap-key-000000";

const api = httpOk;

async function allowed(pdp: ServerProcess, key: string, user: string): Promise<boolean> {
  const res = await fetch(`${pdp.baseUrl}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      user: { key: user },
      action: "read",
      resource: { type: "document", tenant: "default" },
      context: {},
    }),
  });
  assert.equal(res.status, 200);
  return (await res.json()).allow as boolean;
}

test("standalone PDP: follows the control plane, ships decisions, and restarts from its snapshot when the control plane is away", async () => {
  const cpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-cp-"));
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pdp-"));
  const procs: ServerProcess[] = [];
  try {
    const cp = await startServerProcess({
      GATEHOUSE_DATA_DIR: cpDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
    });
    procs.push(cp);
    const key = (await api(cp.baseUrl, BOOTSTRAP, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    const S = "/v2/schema/default/production";
    const F = "/v2/facts/default/production";
    await api(cp.baseUrl, key, "POST", `${S}/resources`, {
      key: "document",
      name: "Document",
      actions: { read: {} },
    });
    await api(cp.baseUrl, key, "POST", `${S}/roles`, {
      key: "reader",
      name: "Reader",
      permissions: ["document:read"],
    });
    await api(cp.baseUrl, key, "POST", `${F}/users`, {
      key: "alice",
      role_assignments: [{ role: "reader", tenant: "default" }],
    });
    await api(cp.baseUrl, key, "POST", `${F}/users`, { key: "bob" });
    // carol's role ends a few seconds from now; the PDP's snapshots carry the instant.
    const carolExpiresAt = Date.now() + 5000;
    await api(cp.baseUrl, key, "POST", `${F}/users`, {
      key: "carol",
      role_assignments: [
        { role: "reader", tenant: "default", expires_at: new Date(carolExpiresAt).toISOString() },
      ],
    });

    const pdpEnv = {
      GATEHOUSE_DATA_DIR: pdpDir,
      GATEHOUSE_CONTROL_PLANE_URL: cp.baseUrl,
      GATEHOUSE_PDP_API_KEY: key,
    };
    const pdp = await startPdpProcess(pdpEnv);
    procs.push(pdp);
    assert.equal(await allowed(pdp, key, "alice"), true);
    assert.equal(await allowed(pdp, key, "bob"), false);

    // A write reaches the PDP through the change stream, without a restart.
    const write = await api(cp.baseUrl, key, "POST", `${F}/role_assignments`, {
      user: "bob",
      role: "reader",
      tenant: "default",
    });
    const revision = Number(write.headers.get("x-gatehouse-revision"));
    const res = await fetch(`${pdp.baseUrl}/allowed`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "x-gatehouse-min-revision": String(revision),
      },
      body: JSON.stringify({
        user: "bob",
        action: "read",
        resource: { type: "document", tenant: "default" },
      }),
    });
    assert.equal((await res.json()).allow, true);
    // A bulk write comes over /v2/pdp-sync as one batch record, which the PDP applies whole.
    const bulk = await api(cp.baseUrl, key, "POST", `${F}/role_assignments/bulk?missing_user_policy=create`, [
      { user: "dave", role: "reader", tenant: "default" },
      { user: "erin", role: "reader", tenant: "default" },
    ]);
    const bulkRevision = Number(bulk.headers.get("x-gatehouse-revision"));
    const feed = await api(
      cp.baseUrl,
      key,
      "GET",
      `/v2/pdp-sync/default/production/changes?after=${revision}`,
    );
    assert.deepEqual(
      feed.json.changes.map((c: { kind: string; data: unknown[] }) => [c.kind, c.data.length]),
      [["batch", 4]],
    );
    const erin = await fetch(`${pdp.baseUrl}/allowed`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "x-gatehouse-min-revision": String(bulkRevision),
      },
      body: JSON.stringify({
        user: "erin",
        action: "read",
        resource: { type: "document", tenant: "default" },
      }),
    });
    assert.equal((await erin.json()).allow, true);
    // Facts through the standalone PDP without project and environment (Permit's Python SDK), and a path that
    // would climb out of the facts routes (sent byte for byte: fetch would resolve it first), refused.
    const viaPdp = await fetch(`${pdp.baseUrl}/facts/users`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ key: "frank" }),
    });
    assert.equal(viaPdp.status, 201, await viaPdp.text());
    const climbed = await new Promise<number>((resolve, reject) => {
      const url = new URL(pdp.baseUrl);
      http
        .request(
          {
            host: url.hostname,
            port: url.port,
            method: "GET",
            path: "/v2/facts/a/b/%2e%2e/%2e%2e/%2e%2e/projects",
            headers: { authorization: `Bearer ${key}` },
          },
          (r) => {
            r.resume();
            resolve(r.statusCode ?? 0);
          },
        )
        .on("error", reject)
        .end();
    });
    assert.equal(climbed, 400);
    const withKey = { headers: { authorization: `Bearer ${key}` } };
    const ready = await (await fetch(`${pdp.baseUrl}/ready`, withKey)).json();
    assert.equal(ready.environments[0].revision >= bulkRevision, true);
    const metrics = await (await fetch(`${pdp.baseUrl}/metrics`, withKey)).text();
    assert.match(metrics, /gatehouse_pdp_revisions_behind\{[^}]*\} 0/);
    // Without a key: counts, no environment id.
    const anonymous = await (await fetch(`${pdp.baseUrl}/ready`)).json();
    assert.equal(anonymous.environment_count, 1);
    assert.equal(anonymous.environments, undefined);
    assert.doesNotMatch(await (await fetch(`${pdp.baseUrl}/metrics`)).text(), /environment_id/);

    // Decisions reach the control plane's decision log.
    const deadline = Date.now() + 10_000;
    let logged = 0;
    while (Date.now() < deadline && logged < 3) {
      logged = (await api(cp.baseUrl, key, "GET", "/v2/pdps/default/production/audit_logs")).json.total_count;
      if (logged < 3) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(logged >= 3, `decisions in the control plane's log: ${logged}`);

    // The control plane goes away; a restarted PDP still answers from its snapshot on disk.
    assert.equal(await pdp.stop(), 0, pdp.output());
    assert.equal(await cp.stop(), 0, cp.output());
    // On disk: the snapshot as it was streamed in (NDJSON, whole to its end line), and the changes since appended
    // to the journal; a line a crash cut short ends the journal.
    const stored = fs.readFileSync(path.join(pdpDir, "pdp-snapshot.ndjson"), "utf8").trimEnd().split("\n");
    assert.equal(JSON.parse(stored[0]!).format, "gatehouse-snapshot/ndjson-1");
    assert.match(stored.at(-1)!, /^\{"end":\{"facts":\d+\}\}$/);
    assert.ok(!fs.existsSync(path.join(pdpDir, "pdp-snapshot.json")));
    const journal = path.join(pdpDir, "pdp-journal.jsonl");
    assert.match(fs.readFileSync(journal, "utf8"), /"bob"/, "bob's assignment came as a change");
    assert.match(fs.readFileSync(journal, "utf8"), /"kind":"batch".*"dave"/, "dave's came in a batch");
    fs.appendFileSync(journal, '{"environment_id":"cut sh');
    const again = await startPdpProcess(pdpEnv);
    procs.push(again);
    assert.match(again.output(), /snapshot on disk/);
    assert.doesNotMatch(
      fs.readFileSync(journal, "utf8"),
      /cut sh/,
      "the cut line is gone, so later lines follow whole ones",
    );
    assert.equal(await allowed(again, key, "bob"), true);
    assert.equal(await allowed(again, key, "dave"), true, "the batch record was kept in the journal");
    assert.equal(await allowed(again, key, "alice"), true);
    // Past carol's instant, with no control plane to purge anything, the PDP denies her and says why.
    await new Promise((r) => setTimeout(r, Math.max(0, carolExpiresAt - Date.now() + 20)));
    const carol = await fetch(`${again.baseUrl}/allowed`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        user: "carol",
        action: "read",
        resource: { type: "document", tenant: "default" },
      }),
    });
    const carolDecision = await carol.json();
    assert.equal(carolDecision.allow, false);
    assert.deepEqual(
      carolDecision.debug.reason.expired.map((g: { role: string; tenant: string }) => [g.role, g.tenant]),
      [["reader", "default"]],
    );
    const metricsAway = await (
      await fetch(`${again.baseUrl}/metrics`, { headers: { authorization: `Bearer ${key}` } })
    ).text();
    assert.match(metricsAway, /gatehouse_pdp_revision\{/);
  } finally {
    for (const p of procs) await p.stop("SIGKILL");
    fs.rmSync(cpDir, { recursive: true, force: true });
    fs.rmSync(pdpDir, { recursive: true, force: true });
  }
});
