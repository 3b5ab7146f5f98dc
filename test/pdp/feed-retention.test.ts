import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { describeEachDialect } from "../helpers/app.ts";
import { tcpRelay } from "../helpers/pg-relay.ts";
import { purgeChanges } from "../../src/changes/retention.ts";
import { databaseFeed } from "../../src/domain/pdp-storage.ts";
import { Replica } from "../../src/pdp/runtime/replica.ts";
import { startStandalonePdp } from "../../src/pdp/standalone.ts";
import { standaloneTestOptions } from "../helpers/pdp.ts";
import type { Engine } from "../../src/pdp/engine/index.ts";

/**
 * A PDP whose revision precedes the changes the feed still keeps (the retention purged the range it missed) loads
 * a snapshot instead of applying what is left and skipping the rest: the embedded PDP's replica over the database,
 * and the standalone PDP over the sync route, which answers 410.
 */

const S = "/v2/schema/default/production";
const F = "/v2/facts/default/production";
/** Two days on: every change is older than a day's retention. */
const LATER = () => Date.now() + 2 * 86_400_000;

async function until(what: string, probe: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const reads = (engine: Engine, user: string) =>
  engine.check({ user: { key: user }, action: "read", resource: { type: "folder", tenant: "default" } })
    .allow;

describeEachDialect("a PDP behind the change feed's retention", (env) => {
  /** Writes through the environment's own key; returns the revision written. */
  async function write(key: string, method: "POST" | "DELETE", url: string, body?: unknown) {
    const res = await env().call(key, method, url, body);
    assert.ok(res.status < 300, `${url}: ${res.status} ${res.body}`);
    return Number(res.headers["x-gatehouse-revision"]);
  }

  /** A user who may read, named `<tag>-<name>`. */
  const reader = (tag: string, name: string) =>
    write(key, "POST", `${F}/users`, {
      key: `${tag}-${name}`,
      role_assignments: [{ role: "reader", tenant: "default" }],
    });

  /** While the PDP is away: `a` loses its role, `b` gets one, then an unrelated write is the only one kept. */
  async function missedWrites(tag: string) {
    await write(key, "DELETE", `${F}/users/${tag}-a`);
    await reader(tag, "b");
    const head = await write(key, "POST", `${F}/users`, { key: `${tag}-c` });
    assert.ok((await purgeChanges(env().store.db, { days: 1, minRevisions: 1 }, LATER())) > 0);
    return head;
  }

  let key = "";
  test("setup: a schema and a user who may read", async () => {
    const { acme, call } = env();
    key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret as string;
    await write(key, "POST", `${S}/resources`, { key: "folder", name: "Folder", actions: { read: {} } });
    await write(key, "POST", `${S}/roles`, { key: "reader", name: "Reader", permissions: ["folder:read"] });
  });

  test("embedded: the replica loads the environment again instead of skipping the purged range", async () => {
    const { acme, store } = env();
    await reader("e", "a");
    const replica = new Replica(databaseFeed(store, acme.envs.production));
    await replica.load();
    assert.equal(reads(replica.engine, "e-a"), true);

    const head = await missedWrites("e");
    await replica.catchUp();
    assert.equal(replica.revision, head);
    assert.equal(
      reads(replica.engine, "e-a"),
      false,
      "the removal, purged from the feed, reached the replica",
    );
    assert.equal(
      reads(replica.engine, "e-b"),
      true,
      "the new role, purged from the feed, reached the replica",
    );
  });

  test("standalone: the sync route answers 410, and the PDP loads a snapshot and answers right", async () => {
    const { app, acme, call } = env();
    await reader("s", "a");
    if (!app.server.listening) await app.listen({ host: "127.0.0.1", port: 0 });
    const relay = await tcpRelay("127.0.0.1", (app.server.address() as AddressInfo).port);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-retention-"));
    const logs: string[] = [];
    const pdp = await startStandalonePdp(
      standaloneTestOptions(`http://127.0.0.1:${relay.port}`, key, dataDir, logs),
    );
    try {
      assert.equal(reads(pdp.replica.engine, "s-a"), true);
      const behind = pdp.replica.revision;
      // The control plane goes out of the PDP's reach while the PDP misses writes that the purge then removes.
      await relay.cut();
      const head = await missedWrites("s");
      const sync = await call(
        key,
        "GET",
        `/v2/pdp-sync/default/${acme.envs.production}/changes?after=${behind}`,
      );
      assert.equal(sync.status, 410, sync.body);
      assert.equal(sync.json.error_code, "REVISION_GONE");
      assert.equal(sync.json.additional_info.revision, head);
      assert.equal(sync.json.additional_info.kept_after, head - 1);

      await relay.mend();
      await until("the PDP to reach the head", () => pdp.replica.revision >= head);
      assert.equal(reads(pdp.replica.engine, "s-a"), false, "the removal reached the PDP");
      assert.equal(reads(pdp.replica.engine, "s-b"), true, "the new role reached the PDP");
      assert.ok(
        logs.some((m) => m.includes(`no longer keeps the changes after revision ${behind}`)),
        logs.join("\n"),
      );
      // It follows the stream again from there.
      const next = await reader("s", "d");
      await until("the next write to reach the PDP", () => pdp.replica.revision >= next);
      assert.equal(reads(pdp.replica.engine, "s-d"), true);
    } finally {
      await pdp.close();
      await relay.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
