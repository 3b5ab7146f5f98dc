import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { ensurePgSchema } from "../../src/db/store.ts";
import { startServerProcess, type ServerProcess } from "../helpers/process.ts";
import { DIALECTS, PG_URL } from "../helpers/stores.ts";
import { startReceiver, until, type Receiver } from "../helpers/webhook-receiver.ts";

const KEY = "e2e-bootstrap-key-for-the-webhook-tests-00";
const SECRET = "e2e-secret-key-for-the-webhook-tests-0000000";
const SETTINGS = {
  GATEHOUSE_BOOTSTRAP_API_KEY: KEY,
  GATEHOUSE_SECRET_KEY: SECRET,
  GATEHOUSE_WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  GATEHOUSE_WEBHOOK_RETRY_BASE_MS: "100",
  GATEHOUSE_WEBHOOK_TIMEOUT_MS: "2000",
};

async function api(server: ServerProcess, method: string, url: string, body?: unknown) {
  const res = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, json: (text ? JSON.parse(text) : undefined) as any, text };
}

/** One scripted write, spread over the instances: a user, or a resource every fifth time. */
async function write(servers: ServerProcess[], n: number, expected: Map<string, string>): Promise<void> {
  const server = servers[n % servers.length]!;
  const key = `w${n}`;
  const res =
    n % 5 === 4
      ? await api(server, "POST", "/v2/schema/default/production/resources", {
          key,
          name: key,
          actions: { read: {} },
        })
      : await api(server, "POST", "/v2/facts/default/production/users", { key });
  assert.ok(res.status === 200 || res.status === 201, res.text);
  expected.set(key, n % 5 === 4 ? "schema.resource" : "facts.user");
}

/** The keys of the objects an event's changes name. */
const keysOf = (payload: { data: { changes?: { object: { key: string } }[] } }) =>
  (payload.data.changes ?? []).map((c) => c.object.key);

/**
 * Writes through the instances while the receiver is up, down, and after Gatehouse crashed and restarted (the
 * receiver still down), then brings the receiver back: every write's change arrives, signed, in one delivery id, and every
 * delivery id the delivery log holds was received (duplicates allowed, none missing).
 */
async function scenario(start: () => Promise<ServerProcess[]>): Promise<void> {
  const receiver: Receiver = await startReceiver();
  let servers: ServerProcess[] = [];
  try {
    servers = await start();
    const created = await api(servers[0]!, "POST", "/v2/webhooks", {
      url: receiver.url,
      events: ["facts.*", "schema.*"],
      project_id: "default",
      environment_id: "production",
    });
    assert.equal(created.status, 201, created.text);
    receiver.setSecret(created.json.secret);
    const expected = new Map<string, string>();
    let n = 0;
    for (; n < 10; n++) await write(servers, n, expected);

    await receiver.stop(); // the receiver's outage
    for (; n < 20; n++) await write(servers, n, expected);
    // A crash right after the last write was answered, most likely before its sender read it from the feed: the
    // restarted senders find it. The receiver is still away.
    for (const server of servers) await server.stop("SIGKILL");
    servers = await start();
    for (; n < 30; n++) await write(servers, n, expected);
    await receiver.start();

    const seen = () => new Set(receiver.received.flatMap((r) => keysOf(r.payload)));
    await until(() => [...expected.keys()].every((k) => seen().has(k)), "every write's event", 90_000);
    assert.deepEqual(receiver.rejected, [], "a delivery failed the Standard Webhooks verification");
    for (const r of receiver.received) {
      for (const key of keysOf(r.payload)) assert.equal(r.type, expected.get(key), key);
    }

    // Every delivery in the log was received, and each write's change is in one delivery (one id), however
    // often that delivery came.
    const log = await api(servers[0]!, "GET", `/v2/webhooks/${created.json.id}/deliveries?per_page=100`);
    const logged = new Set<string>(log.json.data.map((d: { id: string }) => d.id));
    const received = new Set(receiver.received.map((r) => r.id));
    assert.deepEqual([...received].sort(), [...logged].sort());
    const idsOf = new Map<string, Set<string>>();
    for (const r of receiver.received) {
      for (const key of keysOf(r.payload)) idsOf.set(key, (idsOf.get(key) ?? new Set()).add(r.id));
    }
    assert.deepEqual(
      [...idsOf].filter(([, ids]) => ids.size !== 1),
      [],
    );
    await until(async () => {
      const again = await api(servers[0]!, "GET", `/v2/webhooks/${created.json.id}/deliveries?per_page=100`);
      return again.json.data.every((d: { status: string }) => d.status === "delivered");
    }, "the log to show every delivery delivered");
    for (const server of servers) assert.equal(await server.stop(), 0, server.output());
  } finally {
    for (const server of servers) if (server.child.exitCode === null) server.child.kill("SIGKILL");
    await receiver.stop().catch(() => {});
  }
}

test(
  "webhooks on SQLite: every change in one delivery id across a receiver outage and a crash",
  { timeout: 240_000 },
  async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-webhooks-"));
    try {
      await scenario(async () => [await startServerProcess({ ...SETTINGS, GATEHOUSE_DATA_DIR: dataDir })]);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

const pgSkip = DIALECTS.find((d) => d.dialect === "postgres")?.skip ?? false;

test(
  "webhooks on PostgreSQL with two instances: every change in one delivery id across a receiver outage and a crash",
  { timeout: 240_000, skip: pgSkip },
  async () => {
    const schema = `t_e2e_${process.pid}_${randomBytes(4).toString("hex")}`;
    await ensurePgSchema(PG_URL, schema);
    const url = new URL(PG_URL);
    url.searchParams.set("options", `-c search_path=${schema}`);
    const dirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-webhooks-")));
    try {
      await scenario(async () => {
        const servers: ServerProcess[] = [];
        for (const dir of dirs) {
          servers.push(
            await startServerProcess({ ...SETTINGS, DATABASE_URL: url.toString(), GATEHOUSE_DATA_DIR: dir }),
          );
        }
        return servers;
      });
    } finally {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
