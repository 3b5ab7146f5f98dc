import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { ensurePgSchema, openStore } from "../../src/db/store.ts";
import { startServerProcess, type ServerProcess } from "../helpers/process.ts";
import { DIALECTS, PG_URL } from "../helpers/stores.ts";
import { policyOf, seedLargePolicy, seedRichPolicy } from "../helpers/copy-policy.ts";

const KEY = "e2e-bootstrap-key-for-the-tasks-tests-000";
const SECRET = "e2e-secret-key-for-the-tasks-tests-0000000";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

test(
  "SIGKILL in the middle of a large copy: after a restart the task ends with the whole copy or none of it",
  { timeout: 240_000 },
  async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-tasks-"));
    const sqliteFile = path.join(dataDir, "gatehouse.db");
    const settings = {
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_BOOTSTRAP_API_KEY: KEY,
      GATEHOUSE_TASK_LEASE_SECONDS: "2",
    };
    let server: ServerProcess | undefined;
    try {
      server = await startServerProcess(settings);
      const envs = await api(server, "GET", "/v2/projects/default/envs");
      const production: string = envs.json.find((e: { key: string }) => e.key === "production").id;
      assert.equal(await server.stop(), 0);

      // 1,000 resources x 10 actions x 10 roles, every role with every action: 100,000 permissions
      const seeding = openStore({ sqliteFile });
      await seedLargePolicy(seeding.db, "sqlite", production, { resources: 1000, actions: 10, roles: 10 });
      await seeding.close();

      server = await startServerProcess(settings);
      const started = await api(server, "POST", `/v2/projects/default/envs/${production}/copy/async`, {
        target_env: { new: { key: "big-copy", name: "Big copy" } },
      });
      assert.equal(started.status, 202, started.text);
      const taskId: string = started.json.task_id;

      // Watch the file from outside: the source has been read (progress 10) and the write is under way.
      const watcher = openStore({ sqliteFile });
      try {
        const deadline = Date.now() + 60_000;
        for (;;) {
          const task = await watcher.db
            .selectFrom("tasks")
            .select(["status", "progress"])
            .where("id", "=", taskId)
            .executeTakeFirstOrThrow();
          assert.equal(task.status, "processing", "the copy finished before it could be interrupted");
          if (task.progress >= 10) break;
          assert.ok(Date.now() < deadline, "the copy never started");
          await sleep(2);
        }
        server.child.kill("SIGKILL");
        await server.exited;

        const target = await watcher.db
          .selectFrom("environments")
          .select("id")
          .where("key", "=", "big-copy")
          .executeTakeFirst();
        assert.equal(target, undefined, "no half environment after the kill");
        const task = await watcher.db
          .selectFrom("tasks")
          .selectAll()
          .where("id", "=", taskId)
          .executeTakeFirstOrThrow();
        assert.equal(task.status, "processing");
        assert.equal(task.attempts, 1);
      } finally {
        await watcher.close();
      }

      server = await startServerProcess(settings);
      const done = await api(
        server,
        "GET",
        `/v2/projects/default/envs/${production}/copy/async/${taskId}/result?wait=60`,
      );
      assert.equal(done.status, 200);
      assert.notEqual(done.json.status, "processing", "the task was taken over after the restart");
      assert.equal(await server.stop(), 0, server.output());

      const check = openStore({ sqliteFile });
      try {
        const task = await check.db
          .selectFrom("tasks")
          .selectAll()
          .where("id", "=", taskId)
          .executeTakeFirstOrThrow();
        assert.equal(task.attempts, 2, "the interrupted attempt and the one that finished");
        const target = await check.db
          .selectFrom("environments")
          .select("id")
          .where("key", "=", "big-copy")
          .executeTakeFirst();
        if (done.json.status === "success") {
          assert.ok(target);
          assert.equal(done.json.result.id, target.id);
          assert.deepEqual(await policyOf(check.db, target.id), await policyOf(check.db, production));
        } else {
          assert.equal(target, undefined, `failed: ${JSON.stringify(done.json.error)}`);
        }
      } finally {
        await check.close();
      }
    } finally {
      if (server?.child.exitCode === null) server.child.kill("SIGKILL");
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

const pgSkip = DIALECTS.find((d) => d.dialect === "postgres")?.skip ?? false;

test(
  "two instances on one PostgreSQL database: every copy runs exactly once, and wait works on either instance",
  { timeout: 240_000, skip: pgSkip },
  async () => {
    const schema = `t_e2e_${process.pid}_${randomBytes(4).toString("hex")}`;
    await ensurePgSchema(PG_URL, schema);
    const url = new URL(PG_URL);
    url.searchParams.set("options", `-c search_path=${schema}`);
    const dirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-e2e-tasks-")));
    const settings = (dir: string) => ({
      DATABASE_URL: url.toString(),
      GATEHOUSE_DATA_DIR: dir,
      GATEHOUSE_BOOTSTRAP_API_KEY: KEY,
      GATEHOUSE_SECRET_KEY: SECRET,
    });
    const servers: ServerProcess[] = [];
    const store = openStore({ databaseUrl: PG_URL, pgSchema: schema, pgPoolSize: 2 });
    try {
      for (const dir of dirs) servers.push(await startServerProcess(settings(dir)));
      const [a, b] = servers as [ServerProcess, ServerProcess];
      const envs = await api(a, "GET", "/v2/projects/default/envs");
      const production: string = envs.json.find((e: { key: string }) => e.key === "production").id;
      await seedRichPolicy(store.db, production);
      await seedLargePolicy(store.db, "postgres", production, { resources: 20, actions: 5, roles: 3 });
      const source = `/v2/projects/default/envs/${production}`;

      const created: { taskId: string; key: string; via: number }[] = [];
      for (let i = 0; i < 20; i++) {
        const via = i % 2;
        const key = `copy-${i}`;
        const res = await api(servers[via] as ServerProcess, "POST", `${source}/copy/async`, {
          target_env: { new: { key, name: `Copy ${i}` } },
        });
        assert.equal(res.status, 202, res.text);
        created.push({ taskId: res.json.task_id, key, via });
      }
      // read each task with wait on the instance that did not create it
      for (const { taskId, key, via } of created) {
        const other = servers[1 - via] as ServerProcess;
        const res = await api(other, "GET", `${source}/copy/async/${taskId}/result?wait=30`);
        assert.equal(res.status, 200);
        assert.equal(res.json.status, "success", res.text);
        assert.equal(res.json.result.key, key);
      }
      // wait=N on a POST answers with the finished task on either instance
      const waited = await api(b, "POST", `${source}/copy/async?wait=30`, {
        target_env: { new: { key: "copy-waited", name: "Waited" } },
      });
      assert.equal(waited.status, 200, waited.text);
      assert.equal(waited.json.status, "success");

      const tasks = await store.db.selectFrom("tasks").selectAll().execute();
      assert.equal(tasks.length, 21);
      for (const task of tasks) {
        assert.equal(task.status, "success");
        assert.equal(task.attempts, 1, "claimed once");
      }
      assert.equal(new Set(tasks.map((t) => t.lease_owner)).size, 2, "both instances ran tasks");
      const expected = await policyOf(store.db, production);
      for (const { key } of created) {
        const target = await store.db
          .selectFrom("environments")
          .select(["id", "revision"])
          .where("key", "=", key)
          .execute();
        assert.equal(target.length, 1);
        const [row] = target as [{ id: string; revision: number }];
        // revision 1: the new environment's default tenant; revision 2: the copy. A second run would show.
        assert.equal(Number(row.revision), 2);
        assert.deepEqual(await policyOf(store.db, row.id), expected);
      }
      for (const server of servers) assert.equal(await server.stop(), 0, server.output());
    } finally {
      for (const server of servers) if (server.child.exitCode === null) server.child.kill("SIGKILL");
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
