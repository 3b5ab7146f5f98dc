import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { createTestEnv } from "../helpers/app.ts";
import { httpOk, startPdpProcess, startServerProcess, type ServerProcess } from "../helpers/process.ts";
import { startStandalonePdp } from "../../src/pdp/standalone.ts";
import { standaloneTestOptions } from "../helpers/pdp.ts";

/**
 * The standalone PDP's copy on disk (a snapshot file and a journal of the changes since): the journal stays
 * bounded by a fresh snapshot file, and after a kill -9 the PDP starts from its copy and catches up.
 */

const S = "/v2/schema/default/production";
const F = "/v2/facts/default/production";

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const revisionOf = (line: string) => (JSON.parse(line) as { revision: number }).revision;
const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter(Boolean);

test("past its limit the journal is replaced by a fresh snapshot file, without reloading, and the copy starts a PDP", async () => {
  const e = await createTestEnv("sqlite");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-journal-"));
  const logs: string[] = [];
  try {
    const key = (await e.call(e.acme.adminKey, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    const ok = async (url: string, body: unknown) => {
      const res = await e.call(key, "POST", url, body);
      assert.ok(res.status < 300, `${url}: ${res.status} ${res.body}`);
      return Number(res.headers["x-gatehouse-revision"]);
    };
    await ok(`${S}/resources`, { key: "folder", name: "Folder", actions: { read: {} } });
    await ok(`${S}/roles`, { key: "reader", name: "Reader", permissions: ["folder:read"] });
    await e.app.listen({ host: "127.0.0.1", port: 0 });
    const options = standaloneTestOptions(
      `http://127.0.0.1:${(e.app.server.address() as AddressInfo).port}`,
      key,
      dataDir,
      logs,
      { journalLimit: 4 },
    );
    const pdp = await startStandalonePdp(options);
    const file = path.join(dataDir, "pdp-snapshot.ndjson");
    const journal = path.join(dataDir, "pdp-journal.jsonl");
    const first = revisionOf(lines(file)[0]!);
    const engine = pdp.replica.engine;
    const allowed = (user: string) =>
      engine.check({ user: { key: user }, action: "read", resource: { type: "folder", tenant: "default" } })
        .allow;
    let head = 0;
    try {
      for (let i = 0; i < 10; i++) {
        head = await ok(`${F}/users`, {
          key: `u${i}`,
          role_assignments: [{ role: "reader", tenant: "default" }],
        });
      }
      await until("the PDP to hold every write", async () => pdp.replica.revision >= head);
      await until("a fresh snapshot file", async () =>
        logs.some((m) => m.includes("snapshot on disk renewed")),
      );
    } finally {
      await pdp.close();
    }
    const renewed = revisionOf(lines(file)[0]!);
    assert.ok(renewed > first, `the snapshot file moved from revision ${first} to ${renewed}`);
    const kept = lines(journal);
    assert.ok(kept.length <= 4, `${kept.length} changes left in the journal`);
    assert.ok(
      kept.every((line) => revisionOf(line) > renewed),
      "the journal holds only changes after it",
    );
    for (const tmp of [`${file}.tmp`, `${file}.renew.tmp`, `${journal}.tmp`])
      assert.ok(!fs.existsSync(tmp), tmp);
    for (let i = 0; i < 10; i++) assert.equal(allowed(`u${i}`), true, `u${i} in the running engine`);

    // The renewed copy alone (no control plane) starts a PDP at the head with every write.
    logs.length = 0;
    const offline = await startStandalonePdp({ ...options, controlPlaneUrl: "http://127.0.0.1:1" });
    try {
      assert.ok(
        logs.some((m) => m.includes("snapshot on disk")),
        logs.join("\n"),
      );
      assert.equal(offline.replica.revision, head);
      for (let i = 0; i < 10; i++) {
        const decision = offline.replica.engine.check({
          user: { key: `u${i}` },
          action: "read",
          resource: { type: "folder", tenant: "default" },
        });
        assert.equal(decision.allow, true, `u${i} from the copy on disk`);
      }
      assert.equal(
        offline.replica.engine.check({
          user: { key: "nobody" },
          action: "read",
          resource: { type: "folder", tenant: "default" },
        }).allow,
        false,
      );
    } finally {
      await offline.close();
    }
  } finally {
    await e.app.close();
    await e.store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

const BOOTSTRAP = "standalone-journal-bootstrap-key-00000000";

async function allowedOn(pdp: ServerProcess, key: string, user: string): Promise<boolean> {
  const res = await fetch(`${pdp.baseUrl}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ user, action: "read", resource: { type: "document", tenant: "default" } }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).allow as boolean;
}

test("after a kill -9 the standalone PDP starts from its copy on disk and catches up", async () => {
  const cpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-crash-cp-"));
  const pdpDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-crash-pdp-"));
  const procs: ServerProcess[] = [];
  const env = { GATEHOUSE_DATA_DIR: cpDir, GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP };
  try {
    let cp = await startServerProcess(env);
    procs.push(cp);
    const key = (await httpOk(cp.baseUrl, BOOTSTRAP, "GET", "/v2/api-key/default/production")).json
      .secret as string;
    await httpOk(cp.baseUrl, key, "POST", `${S}/resources`, {
      key: "document",
      name: "Doc",
      actions: { read: {} },
    });
    await httpOk(cp.baseUrl, key, "POST", `${S}/roles`, {
      key: "reader",
      name: "R",
      permissions: ["document:read"],
    });
    const assign = (user: string) =>
      httpOk(cp.baseUrl, key, "POST", `${F}/users`, {
        key: user,
        role_assignments: [{ role: "reader", tenant: "default" }],
      });
    const pdpEnv = {
      GATEHOUSE_DATA_DIR: pdpDir,
      GATEHOUSE_CONTROL_PLANE_URL: cp.baseUrl,
      GATEHOUSE_PDP_API_KEY: key,
    };
    const pdp = await startPdpProcess(pdpEnv);
    procs.push(pdp);
    for (const user of ["a0", "a1", "a2"]) await assign(user);
    const journal = path.join(pdpDir, "pdp-journal.jsonl");
    await until(
      "the writes in the journal",
      async () => fs.existsSync(journal) && lines(journal).length >= 3,
    );
    await pdp.stop("SIGKILL");

    // Written while the PDP is down, then the control plane goes away too.
    await assign("b0");
    assert.equal(await cp.stop(), 0, cp.output());
    const fromDisk = await startPdpProcess(pdpEnv);
    procs.push(fromDisk);
    for (const user of ["a0", "a1", "a2"]) assert.equal(await allowedOn(fromDisk, key, user), true, user);
    assert.equal(await allowedOn(fromDisk, key, "b0"), false, "b0 is not in the copy on disk");

    // The control plane is back where the PDP looks for it: the PDP catches up.
    cp = await startServerProcess(env, [], { port: cp.port });
    procs.push(cp);
    await until("b0 to reach the PDP", () => allowedOn(fromDisk, key, "b0"));
    for (const user of ["a0", "a1", "a2"]) assert.equal(await allowedOn(fromDisk, key, user), true, user);
  } finally {
    for (const proc of procs) await proc.stop("SIGKILL");
    fs.rmSync(cpDir, { recursive: true, force: true });
    fs.rmSync(pdpDir, { recursive: true, force: true });
  }
});
