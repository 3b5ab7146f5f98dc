import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { createTestEnv, buildTestApp, PUBLIC_URL } from "../helpers/app.ts";
import { DIALECTS, PG_URL, freshStore } from "../helpers/stores.ts";
import { openStore } from "../../src/db/store.ts";
import { CHANGES_CHANNEL_SQL, ChangeNotifier } from "../../src/changes/feed.ts";
import { listenForChanges } from "../../src/changes/pg-listener.ts";
import { createEmbeddedPdp } from "../../src/pdp/embedded.ts";
import { databasePdpStorage } from "../../src/domain/pdp-storage.ts";
import { buildPdpApp } from "../../src/pdp/http/server.ts";
import { loadConfig } from "../../src/config.ts";
import { startServer } from "../../src/server.ts";

const pgSkip = DIALECTS.find((d) => d.dialect === "postgres")?.skip ?? false;

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test(
  "PostgreSQL: a write through instance A wakes instance B's embedded PDP by NOTIFY, not by its poll",
  { skip: pgSkip },
  async () => {
    // Instance A: a control plane on a fresh schema.
    const env = await createTestEnv("postgres");
    // Instance B: its own pool on the same schema, its own control plane, notifier, LISTEN connection and embedded
    // PDP. B's PDP polls once every ten minutes: it cannot poll within this test's deadlines, so a change it sees
    // within them reached it through the notification.
    const storeB = openStore({ databaseUrl: PG_URL, pgSchema: env.store.location.pgSchema!, pgPoolSize: 2 });
    const appB = await buildTestApp(storeB, env.box);
    const pdpB = createEmbeddedPdp({
      storage: databasePdpStorage(storeB),
      notifier: appB.notifier,
      publicUrl: PUBLIC_URL,
      controlPlane: () => appB,
      pollMs: 600_000,
    });
    const pdpAppB = await buildPdpApp(pdpB);
    const listenerB = listenForChanges({ clientConfig: storeB.pgClientConfig!, notifier: appB.notifier });
    // A Gatehouse on another schema of the same database hears nothing of A's writes.
    const other = await freshStore("postgres");
    const otherNotifier = new ChangeNotifier();
    const heardByOther: string[] = [];
    otherNotifier.subscribe((id, revision) => void heardByOther.push(`${id}:${revision}`));
    const otherListener = listenForChanges({ clientConfig: other.pgClientConfig!, notifier: otherNotifier });
    try {
      const { acme, call } = env;
      const key = (await call(acme.adminKey, "GET", "/v2/api-key/default/production")).json.secret as string;
      const write = async (method: "POST" | "DELETE", url: string, body?: unknown) => {
        const res = await call(key, method, url, body);
        assert.ok(res.status < 300, `${method} ${url} -> ${res.status} ${res.body}`);
        return Number(res.headers["x-gatehouse-revision"]);
      };
      await write("POST", "/v2/schema/default/production/resources", {
        key: "document",
        name: "Document",
        actions: { read: {} },
      });
      await write("POST", "/v2/schema/default/production/roles", {
        key: "reader",
        name: "Reader",
        permissions: ["document:read"],
      });
      await write("POST", "/v2/facts/default/production/users", { key: "bob" });

      // A check that names no revision never makes the PDP catch up: it answers from what the copy holds.
      const bobMayRead = async () => {
        const res = await pdpAppB.inject({
          method: "POST",
          url: "/allowed",
          headers: { authorization: `Bearer ${key}` },
          payload: { user: "bob", action: "read", resource: { type: "document", tenant: "default" } },
        });
        assert.equal(res.statusCode, 200, res.body);
        return res.json().allow as boolean;
      };
      // B loads its copy now (at the latest revision), then hears of changes only through NOTIFY.
      assert.equal(await bobMayRead(), false);
      await until("B's LISTEN connection", async () => listenerB.listening || undefined);
      await until("the other schema's LISTEN connection", async () => otherListener.listening || undefined);

      const granted = await write("POST", "/v2/facts/default/production/role_assignments", {
        user: "bob",
        role: "reader",
        tenant: "default",
      });
      await until("B's PDP to see the role assignment", async () => (await bobMayRead()) || undefined);
      const revisionB = () =>
        pdpB.status().environments.find((e) => e.environmentId === acme.envs.production);
      assert.equal(revisionB()?.revision, granted);

      // The LISTEN connection is cut: it comes back by itself, and the next write wakes B again.
      const { rows } = await sql<{
        channel: string;
      }>`select ${sql.raw(CHANGES_CHANNEL_SQL)} as channel`.execute(storeB.db);
      const channel = rows[0]!.channel;
      const killed = await sql<{ n: number }>`select count(pg_terminate_backend(pid))::int as n
        from pg_stat_activity where application_name = 'gatehouse-listen' and query = ${`listen "${channel}"`}`.execute(
        storeB.db,
      );
      assert.equal(killed.rows[0]?.n, 1);
      await until("B's LISTEN connection to drop", async () => !listenerB.listening || undefined);
      await until("B's LISTEN connection to come back", async () => listenerB.listening || undefined);
      const revoked = await write("DELETE", "/v2/facts/default/production/role_assignments", {
        user: "bob",
        role: "reader",
        tenant: "default",
      });
      await until("B's PDP to see the unassignment", async () => ((await bobMayRead()) ? undefined : true));
      assert.equal(revisionB()?.revision, revoked);
      assert.deepEqual(heardByOther, []);
    } finally {
      await otherListener.close();
      await other.close();
      await listenerB.close();
      await pdpAppB.close();
      await pdpB.close();
      await appB.close();
      await storeB.close();
      await env.app.close();
      await env.store.close();
    }
  },
);

test(
  "PostgreSQL: gatehouse serve holds one LISTEN connection on its schema's channel and lets it go when it closes",
  { skip: pgSkip },
  async () => {
    const store = await freshStore("postgres");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-listen-"));
    try {
      // The schema comes in DATABASE_URL, as a deployment on a schema of its own would give it.
      const url = new URL(PG_URL);
      url.searchParams.set("options", `-c search_path=${store.location.pgSchema}`);
      const config = loadConfig([], {
        DATABASE_URL: url.toString(),
        GATEHOUSE_API_PORT: "0",
        GATEHOUSE_PDP_PORT: "0",
        GATEHOUSE_DATA_DIR: dir,
        GATEHOUSE_LOG_LEVEL: "silent",
      });
      const { rows } = await sql<{
        channel: string;
      }>`select ${sql.raw(CHANGES_CHANNEL_SQL)} as channel`.execute(store.db);
      const listeners = async () => {
        const found = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where application_name = 'gatehouse-listen' and query = ${`listen "${rows[0]!.channel}"`}`.execute(
          store.db,
        );
        return found.rows[0]?.n;
      };
      const server = await startServer(config, () => {});
      try {
        await until("the server's LISTEN connection", async () =>
          (await listeners()) === 1 ? true : undefined,
        );
      } finally {
        await server.close();
      }
      await until("the LISTEN connection to close", async () =>
        (await listeners()) === 0 ? true : undefined,
      );
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
