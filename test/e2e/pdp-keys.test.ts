import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/process.ts";
import { DIALECTS, freshDatabase } from "../helpers/stores.ts";

const BOOTSTRAP = "pdp-keys-e2e-bootstrap-key-0000000000000";
/** How long the embedded PDP remembers a key lookup (docs/pdp.md); a check later than this proves nothing. */
const KEY_CACHE_MS = 5000;

async function api(server: ServerProcess, method: string, url: string, body?: unknown) {
  const res = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${BOOTSTRAP}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${url} -> ${res.status} ${text}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return (text ? JSON.parse(text) : undefined) as any;
}

/** A check on the embedded PDP's own port: its status, and the decision when there is one. */
async function check(pdpBase: string, secret: string): Promise<{ status: number; allow?: boolean }> {
  const res = await fetch(`${pdpBase}/allowed`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ user: { key: "alice" }, action: "read", resource: { type: "document" } }),
  });
  const body = (await res.json()) as { allow?: boolean };
  return { status: res.status, allow: body.allow };
}

/** Checks twice (the second from the PDP's memory of the key); returns when the lookup was made. */
async function seen(pdpBase: string, secret: string): Promise<number> {
  const at = Date.now();
  for (let i = 0; i < 2; i++) assert.deepEqual(await check(pdpBase, secret), { status: 200, allow: true });
  return at;
}

/** Runs `fn` against `gatehouse serve` with its embedded PDP on a fresh database of `dialect`, then stops it. */
async function withServer(
  dialect: string,
  fn: (cp: ServerProcess, pdpBase: string) => Promise<void>,
): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-pdp-keys-"));
  const database = await freshDatabase(dialect);
  let server: (ServerProcess & { pdpPort: number }) | undefined;
  try {
    server = await startServerProcess(
      {
        GATEHOUSE_DATA_DIR: dataDir,
        GATEHOUSE_BOOTSTRAP_API_KEY: BOOTSTRAP,
        GATEHOUSE_OPA_PORT: "0",
        ...database.settings,
      },
      [],
      { pdp: true },
    );
    await fn(server, `http://127.0.0.1:${server.pdpPort}`);
    assert.equal(await server.stop(), 0, server.output());
  } finally {
    if (server?.child.exitCode === null) server.child.kill("SIGKILL");
    await database.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** In environment `env` of project `default`: alice may read documents. */
async function seedReader(cp: ServerProcess, env: string): Promise<void> {
  await api(cp, "POST", `/v2/schema/default/${env}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {} },
  });
  await api(cp, "POST", `/v2/schema/default/${env}/roles`, {
    key: "reader",
    name: "Reader",
    permissions: ["document:read"],
  });
  await api(cp, "POST", `/v2/facts/default/${env}/users`, {
    key: "alice",
    role_assignments: [{ role: "reader", tenant: "default" }],
  });
}

for (const { dialect, skip } of DIALECTS) {
  test(
    `gatehouse serve: a key revoked or rotated through the API is refused by the embedded PDP on the next check [${dialect}]`,
    { skip, timeout: 180_000 },
    () =>
      withServer(dialect, async (cp, pdpBase) => {
        const project = await api(cp, "GET", "/v2/projects/default");
        const envs = (await api(cp, "GET", "/v2/projects/default/envs")) as { id: string; key: string }[];
        const production = envs.find((e) => e.key === "production")?.id as string;
        await seedReader(cp, "production");
        const newKey = async (): Promise<{ id: string; secret: string }> =>
          api(cp, "POST", "/v2/api-key", {
            object_type: "env",
            project_id: project.id,
            environment_id: production,
            access_level: "read",
          });

        // The PDP remembers a key for a few seconds; a refusal after that proves nothing about the wiring, so on
        // a machine slow enough to pass that time, the round is repeated with fresh keys.
        let conclusive = 0;
        for (let round = 0; round < 5 && conclusive === 0; round++) {
          const [revoked, rotated, kept] = [await newKey(), await newKey(), await newKey()];
          const lookedUp = Math.min(await seen(pdpBase, revoked.secret), await seen(pdpBase, rotated.secret));
          await seen(pdpBase, kept.secret);

          await api(cp, "DELETE", `/v2/api-key/${revoked.id}`);
          const afterRevoke = await check(pdpBase, revoked.secret);
          const rotatedNow = await api(cp, "POST", `/v2/api-key/${rotated.id}/rotate-secret`);
          const afterRotate = await check(pdpBase, rotated.secret);
          const withinCache = Date.now() - lookedUp < KEY_CACHE_MS;

          assert.equal(afterRevoke.status, 401, "the revoked key is refused on the next check");
          assert.equal(afterRotate.status, 401, "the rotated-away secret is refused on the next check");
          assert.deepEqual(await check(pdpBase, rotatedNow.secret), { status: 200, allow: true });
          assert.deepEqual(
            await check(pdpBase, kept.secret),
            { status: 200, allow: true },
            "other keys work",
          );
          if (withinCache) conclusive += 1;
        }
        assert.ok(conclusive > 0, "no round finished while the PDP still remembered the keys");
      }),
  );

  test(
    `gatehouse serve: the embedded PDP stops answering for an environment deleted through the API at once [${dialect}]`,
    { skip, timeout: 180_000 },
    () =>
      withServer(dialect, async (cp, pdpBase) => {
        const project = await api(cp, "GET", "/v2/projects/default");
        // As above: only a round that ends while the PDP still remembers the key proves the wiring.
        let conclusive = 0;
        for (let round = 0; round < 5 && conclusive === 0; round++) {
          const env = await api(cp, "POST", "/v2/projects/default/envs", {
            key: `doomed-${round}`,
            name: `Doomed ${round}`,
          });
          await seedReader(cp, env.key);
          const key = await api(cp, "POST", "/v2/api-key", {
            object_type: "env",
            project_id: project.id,
            environment_id: env.id,
            access_level: "read",
          });
          const lookedUp = await seen(pdpBase, key.secret);
          await api(cp, "DELETE", `/v2/projects/default/envs/${env.id}`);
          const afterDelete = await check(pdpBase, key.secret);
          const withinCache = Date.now() - lookedUp < KEY_CACHE_MS;
          assert.notDeepEqual(
            afterDelete,
            { status: 200, allow: true },
            "the PDP no longer answers from its copy of the deleted environment",
          );
          // The key went with its environment: refused, not a 500 from reloading what no longer exists.
          assert.ok([401, 404].includes(afterDelete.status), JSON.stringify(afterDelete));
          if (withinCache) conclusive += 1;
        }
        assert.ok(conclusive > 0, "no round finished while the PDP still remembered the key");
      }),
  );
}
