import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { createTestEnv, describeEachDialect, type TestEnv } from "../helpers/app.ts";
import { readSnapshot } from "../../src/domain/environment-snapshot.ts";
import { snapshotLines } from "../../src/domain/snapshot-stream.ts";
import { databaseFeed } from "../../src/domain/pdp-storage.ts";
import { collectPages, engineAssembler, SnapshotAssembler } from "../../src/pdp/snapshot-lines.ts";
import { createEngine } from "../../src/pdp/engine/index.ts";
import { startStandalonePdp } from "../../src/pdp/standalone.ts";
import { standaloneTestOptions } from "../helpers/pdp.ts";
import type { EnvironmentData } from "../../src/pdp/engine/types.ts";

const S = "/v2/schema/default/production";
const F = "/v2/facts/default/production";

/** The data with every list sorted, so that two reads compare whatever order their rows came in. */
function sorted(data: EnvironmentData): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [kind, list] of Object.entries(data)) {
    out[kind] = (list as unknown[]).map((x) => JSON.stringify(x)).sort();
  }
  return out;
}

/** An assembler that keeps the pages it reads in `data`. */
function collector(): { assembler: SnapshotAssembler; data: EnvironmentData } {
  const data: EnvironmentData = {};
  return { assembler: new SnapshotAssembler(collectPages(data)), data };
}

async function seed(env: TestEnv, users: number): Promise<string> {
  const key = (await env.call(env.acme.adminKey, "GET", "/v2/api-key/default/production")).json
    .secret as string;
  const ok = async (method: "POST" | "DELETE", url: string, body?: unknown) => {
    const res = await env.call(key, method, url, body);
    assert.ok(res.status < 300, `${method} ${url}: ${res.status} ${res.body}`);
  };
  await ok("POST", `${S}/resources`, { key: "folder", name: "Folder", actions: { read: {} } });
  await ok("POST", `${S}/resources/folder/relations`, {
    key: "parent",
    name: "Parent",
    subject_resource: "folder",
  });
  await ok("POST", `${S}/roles`, { key: "reader", name: "Reader", permissions: ["folder:read"] });
  await ok("POST", `${F}/tenants`, { key: "t1", name: "T1" });
  await ok("POST", `${F}/resource_instances`, { key: "root", resource: "folder", tenant: "t1" });
  await ok("POST", `${F}/resource_instances`, { key: "sub", resource: "folder", tenant: "t1" });
  await ok("POST", `${F}/relationship_tuples`, {
    subject: "folder:root",
    relation: "parent",
    object: "folder:sub",
    tenant: "t1",
  });
  for (let i = 0; i < users; i++) {
    await ok("POST", `${F}/users`, {
      key: `u${i}`,
      attributes: { n: i },
      role_assignments: [{ role: "reader", tenant: i % 2 === 0 ? "default" : "t1" }],
    });
  }
  return key;
}

describeEachDialect("snapshot stream", (env) => {
  let key = "";
  before(async () => {
    key = await seed(env(), 7);
  });

  test("is exactly at its revision while writes commit between its pages", async () => {
    const e = env();
    const expected = await readSnapshot(e.store.db, e.store.dialect, e.acme.envs.production);
    const ids = {
      organization_id: e.acme.id,
      project_id: e.acme.projectId,
      environment_id: e.acme.envs.production,
    };
    const lines = await snapshotLines(e.store, ids, 2);
    const { assembler, data } = collector();
    // The header, the policy and the first page of users.
    for (let i = 0; i < 3; i++) assembler.line(((await lines.next()).value as string).trimEnd());
    // Between two pages: a user with a role (two writes), one gone, one changed, a tuple gone.
    const write = async (method: "POST" | "DELETE" | "PATCH", url: string, body?: unknown) =>
      assert.ok((await e.call(key, method, url, body)).status < 300, `${method} ${url}`);
    await write("POST", `${F}/users`, { key: "late", role_assignments: [{ role: "reader", tenant: "t1" }] });
    await write("DELETE", `${F}/users/u6`);
    await write("PATCH", `${F}/users/u5`, { attributes: { n: "changed" } });
    await write("POST", `${F}/role_assignments`, { user: "u4", role: "reader", tenant: "t1" });
    for (let next = await lines.next(); !next.done; next = await lines.next())
      assembler.line(next.value.trimEnd());
    assert.equal(assembler.finish().revision, expected.revision);
    assert.deepEqual(sorted(data), sorted(expected.data));
    assert.ok(
      data.users?.some((u) => u.key === "u6"),
      "u6 was deleted after the snapshot's revision",
    );
    assert.ok(!data.users?.some((u) => u.key === "late"), "late came after the snapshot's revision");
    // The writes did commit, at later revisions, and a new snapshot has them.
    const now = await readSnapshot(e.store.db, e.store.dialect, e.acme.envs.production);
    assert.ok(now.revision > expected.revision);
    assert.ok(now.data.users?.some((u) => u.key === "late"));
  });

  test("the embedded PDP's snapshot comes in pages equal to the whole read, and a write commits while they are read", async () => {
    const e = env();
    const expected = await readSnapshot(e.store.db, e.store.dialect, e.acme.envs.production);
    const snapshot = await databaseFeed(e.store, e.acme.envs.production).snapshot();
    assert.ok("pages" in snapshot, "a snapshot of pages");
    assert.equal(snapshot.revision, expected.revision);
    const data: EnvironmentData = {};
    const sink = collectPages(data);
    const pages = snapshot.pages[Symbol.asyncIterator]();
    const first = await pages.next();
    assert.ok(!first.done && "resources" in first.value, "the policy comes first");
    sink(first.value);
    // The read holds no lock a writer waits for (SQLite: a connection of its own; PostgreSQL: repeatable read).
    const wrote = e.call(key, "POST", `${F}/users`, { key: "during" });
    const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 5000).unref());
    const res = await Promise.race([wrote, timeout]);
    assert.ok(res !== "timeout" && res.status === 201, "the write committed while the pages were open");
    for (let next = await pages.next(); !next.done; next = await pages.next()) sink(next.value);
    assert.deepEqual(sorted(data), sorted(expected.data));
    assert.ok(!data.users?.some((u) => u.key === "during"), "the write came after the snapshot's revision");
  });

  test("an engine built page by page from the stream answers as one built from the whole data", async () => {
    const e = env();
    const ids = {
      organization_id: e.acme.id,
      project_id: e.acme.projectId,
      environment_id: e.acme.envs.production,
    };
    const { assembler, engine } = engineAssembler();
    let lines = 0;
    // Pages of two facts: each kind spans several pages.
    for await (const line of await snapshotLines(e.store, ids, 2)) {
      assembler.line(line.trimEnd());
      lines++;
    }
    assert.ok(lines > 6, `${lines} lines`);
    const expected = await readSnapshot(e.store.db, e.store.dialect, e.acme.envs.production);
    assert.equal(assembler.finish().revision, expected.revision);
    const whole = createEngine(expected.data);
    let allowed = 0;
    for (const user of expected.data.users ?? []) {
      for (const resource of [
        { type: "folder", tenant: "t1" },
        { type: "folder", tenant: "default" },
        { type: "folder", key: "sub", tenant: "t1" },
      ]) {
        const query = { user: { key: user.key }, action: "read", resource };
        const got = engine.check(query);
        assert.deepEqual(got, whole.check(query), JSON.stringify(query));
        if (got.allow) allowed++;
      }
    }
    assert.ok(allowed > 0, "some checks allow");
    assert.deepEqual(engine.userTenants("u1"), whole.userTenants("u1"));
  });

  test("the route answers NDJSON equal to the database's data, and 404 for another environment's path", async () => {
    const e = env();
    const res = await e.call(key, "GET", "/v2/pdp-sync/default/production/snapshot");
    assert.equal(res.status, 200);
    assert.match(String(res.headers["content-type"]), /application\/x-ndjson/);
    const { assembler, data } = collector();
    for (const line of res.body.split("\n")) assembler.line(line);
    const header = assembler.finish();
    const expected = await readSnapshot(e.store.db, e.store.dialect, e.acme.envs.production);
    assert.equal(header.revision, expected.revision);
    assert.equal(header.environment_id, e.acme.envs.production);
    assert.deepEqual(sorted(data), sorted(expected.data));
    // Cut anywhere before its end line, the same text is refused.
    const text = res.body.trimEnd().split("\n");
    const { assembler: cut } = collector();
    for (const line of text.slice(0, -1)) cut.line(line);
    assert.throws(() => cut.finish(), /cut/);
    const other = await e.call(key, "GET", "/v2/pdp-sync/default/nope/snapshot");
    assert.ok(other.status >= 400 && other.status < 500, `${other.status}`);
    assert.equal(typeof other.json, "object");
  });
});

/**
 * A proxy in front of a control plane that cuts the first `cuts` snapshot answers half-way (headers and half the
 * body sent, then the connection closed).
 */
async function cuttingProxy(target: string) {
  const state = { cuts: 0, snapshots: 0 };
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      `${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (up) => {
        const isSnapshot = req.url?.endsWith("/snapshot") === true && up.statusCode === 200;
        if (isSnapshot) state.snapshots++;
        if (!isSnapshot || state.cuts <= 0) {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
          return;
        }
        state.cuts--;
        const chunks: Buffer[] = [];
        up.on("data", (c: Buffer) => chunks.push(c));
        up.on("end", () => {
          const body = Buffer.concat(chunks);
          res.writeHead(200, { "content-type": "application/x-ndjson" });
          res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
        });
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { state, url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test("a cut snapshot stream never leaves the standalone PDP with a partial copy", async () => {
  const e = await createTestEnv("sqlite");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-snap-cut-"));
  const logs: string[] = [];
  try {
    const key = await seed(e, 3);
    await e.app.listen({ host: "127.0.0.1", port: 0 });
    const proxy = await cuttingProxy(`http://127.0.0.1:${(e.app.server.address() as AddressInfo).port}`);
    const start = () => startStandalonePdp(standaloneTestOptions(proxy.url, key, dataDir, logs));
    const revision = () =>
      e.store.db
        .selectFrom("environments")
        .select("revision")
        .where("id", "=", e.acme.envs.production)
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.revision));

    // The first stream is cut: the PDP asks again and loads the whole one.
    proxy.state.cuts = 1;
    const first = await start();
    assert.equal(proxy.state.snapshots, 2, "one cut stream, one whole");
    assert.equal(first.replica.revision, await revision());
    const file = path.join(dataDir, "pdp-snapshot.ndjson");
    const copy = fs.readFileSync(file, "utf8");
    assert.match(copy, /"end":\{"facts":/);
    assert.ok(!fs.existsSync(`${file}.tmp`));
    await first.close();

    // Every stream is cut now: the PDP keeps its old copy, starts from it, and follows the changes from there.
    const write = await e.call(key, "POST", `${F}/users`, {
      key: "after-cut",
      role_assignments: [{ role: "reader", tenant: "default" }],
    });
    assert.equal(write.status, 201, write.body);
    proxy.state.cuts = 1_000;
    const second = await start();
    try {
      assert.ok(
        logs.some((m) => /snapshot on disk/.test(m)),
        logs.join("\n"),
      );
      assert.equal(fs.readFileSync(file, "utf8"), copy, "the copy on disk is the old one, whole");
      assert.ok(!fs.existsSync(`${file}.tmp`), "no partial copy left behind");
      const head = await revision();
      const deadline = Date.now() + 10_000;
      while (second.replica.revision < head && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      assert.equal(second.replica.revision, head, "it caught up through the change stream");
    } finally {
      await second.close();
    }

    // A copy of an older version (one JSON document) is still read.
    const { assembler, data } = collector();
    for (const line of copy.split("\n")) assembler.line(line);
    const header = assembler.finish();
    const base = header.revision;
    const { format: _format, revision: _revision, ...ids } = header;
    fs.writeFileSync(
      path.join(dataDir, "pdp-snapshot.json"),
      JSON.stringify({ ...ids, base: { revision: base, data }, changes: [] }),
    );
    fs.rmSync(file);
    fs.writeFileSync(path.join(dataDir, "pdp-journal.jsonl"), "");
    logs.length = 0;
    const third = await start();
    try {
      assert.ok(
        logs.some((m) => m.includes(`snapshot on disk at revision ${base}`)),
        logs.join("\n"),
      );
      assert.ok(!fs.existsSync(file), "a cut stream wrote no new copy");
    } finally {
      await third.close();
      await proxy.close();
    }
  } finally {
    await e.app.close();
    await e.store.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
