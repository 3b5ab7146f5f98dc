import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config.ts";
import { openStore, type Store } from "../../src/db/store.ts";
import { AppError } from "../../src/lib/errors.ts";
import { toTimestamp } from "../../src/lib/time.ts";
import {
  createTaskRunner,
  LeaseLostError,
  type TaskRunner,
  type TaskRunnerOptions,
} from "../../src/tasks/task-runner.ts";
import { createTasksService } from "../../src/tasks/tasks.service.ts";
import type { TaskRow } from "../../src/tasks/tasks.repo.ts";
import { createTestEnv, describeEachDialect, PUBLIC_URL } from "../helpers/app.ts";
import { DIALECTS, PG_URL } from "../helpers/stores.ts";
import { ChangeNotifier } from "../../src/changes/feed.ts";
import { listenForChanges } from "../../src/changes/pg-listener.ts";

declare module "../../src/tasks/task-types.ts" {
  interface TaskTypes {
    test_count: { params: { n: number }; result: { n: number } };
    test_hold: { params: Record<string, never>; result: { held: true } };
    test_fail: { params: { how: "app" | "crash" | "rollback" }; result: null };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ago = (ms: number) => toTimestamp(new Date(Date.now() - ms));
/** The production settings (not this process's environment): lease and retention as `gatehouse serve` has them. */
const config = loadConfig([], {});

async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** `promise`, or a failure once `ms` have passed: a regression fails the test instead of hanging it. */
async function within<T>(what: string, promise: Promise<T>, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describeEachDialect("background tasks", (env) => {
  const runners: TaskRunner[] = [];
  const stores: Store[] = [];

  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.stop();
    for (const store of stores.splice(0)) await store.close();
    await env().store.db.deleteFrom("tasks").execute();
  });

  /** A gate per held task: the handler waits until the test opens it (or the task is aborted). */
  interface Held {
    open(): void;
    signal: AbortSignal;
  }

  /** One "instance": a tasks service over `store` with the test handlers, and a worker. */
  function instance(store: Store = env().store, options: Partial<TaskRunnerOptions> = {}) {
    const tasks = createTasksService({ db: store.db, dialect: store.dialect, publicUrl: PUBLIC_URL });
    const runs: { id: string; owner: string }[] = [];
    const held = new Map<string, Held>();
    const runner = createTaskRunner(tasks, {
      pollMs: 10,
      leaseMs: config.taskLeaseSeconds * 1000,
      retentionDays: config.taskRetentionDays,
      ...options,
    });
    runners.push(runner);
    tasks.registry.register("test_count", async (context) => {
      runs.push({ id: context.task.id, owner: runner.owner });
      await sleep(5);
      return { n: context.params.n };
    });
    tasks.registry.register(
      "test_hold",
      (context) =>
        new Promise((resolve, reject) => {
          held.set(context.task.id, { open: () => resolve({ held: true }), signal: context.signal });
          context.signal.addEventListener("abort", () => reject(context.signal.reason as Error));
        }),
    );
    tasks.registry.register("test_fail", async (context) => {
      if (context.params.how === "app") throw new AppError("CONFLICT", "the thing is in the way");
      if (context.params.how === "rollback") {
        await store.db.transaction().execute(async (trx) => {
          await context.succeedWithin(trx, null);
          throw new AppError("CONFLICT", "rolled back after succeeding");
        });
      }
      throw new Error("secret internal detail");
    });
    return { tasks, runner, runs, held };
  }

  /** A second connection (pool) to the same database: another instance of the service. */
  function secondStore(): Store {
    const { location } = env().store;
    const store = openStore({
      databaseUrl: location.databaseUrl,
      ...(location.sqliteFile && { sqliteFile: location.sqliteFile }),
      ...(location.pgSchema && { pgSchema: location.pgSchema }),
    });
    stores.push(store);
    return store;
  }

  /** Where the test tasks live: acme's production environment. */
  const taskOf = () => ({
    organizationId: env().acme.id,
    projectId: env().acme.projectId,
    environmentId: env().acme.envs.production,
  });
  const row = (id: string): Promise<TaskRow> =>
    env().store.db.selectFrom("tasks").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
  const patch = (id: string, values: Partial<TaskRow>) =>
    env().store.db.updateTable("tasks").set(values).where("id", "=", id).execute();
  const errorOf = (task: TaskRow) => JSON.parse(task.error ?? "null") as Record<string, string>;

  test("two instances with their own connections run every task exactly once", async () => {
    const a = instance();
    const b = instance(secondStore());
    const ids: string[] = [];
    for (let n = 0; n < 40; n++) {
      const via = n % 2 === 0 ? a.tasks : b.tasks;
      ids.push((await via.submit({ type: "test_count", params: { n }, ...taskOf() })).id);
    }
    a.runner.start();
    b.runner.start();
    await until("every task finished", async () => {
      const open = await env()
        .store.db.selectFrom("tasks")
        .select("id")
        .where("status", "=", "processing")
        .execute();
      return open.length === 0;
    });
    const runs = [...a.runs, ...b.runs];
    assert.equal(runs.length, 40);
    assert.equal(new Set(runs.map((r) => r.id)).size, 40);
    assert.equal(new Set(runs.map((r) => r.owner)).size, 2, "both instances worked");
    for (const id of ids) {
      const task = await row(id);
      assert.equal(task.status, "success");
      assert.equal(task.attempts, 1);
      assert.equal(task.progress, 100);
      assert.ok(task.started_at && task.finished_at && task.finished_at >= task.started_at);
    }
  });

  test("claims racing on two connections never hand out the same task twice", async () => {
    const a = instance();
    const b = instance(secondStore());
    for (let n = 0; n < 30; n++) await a.tasks.submit({ type: "test_count", params: { n }, ...taskOf() });
    const attempts = await Promise.all([
      ...Array.from({ length: 20 }, () => a.runner.runOnce()),
      ...Array.from({ length: 20 }, () => b.runner.runOnce()),
    ]);
    assert.equal(attempts.filter(Boolean).length, 30);
    const runs = [...a.runs, ...b.runs];
    assert.equal(runs.length, 30);
    assert.equal(new Set(runs.map((r) => r.id)).size, 30);
  });

  test("a task whose worker died is taken over once its lease expires, not before", async () => {
    const { tasks, runner, runs } = instance();
    const { id } = await tasks.submit({ type: "test_count", params: { n: 7 }, ...taskOf() });
    await patch(id, {
      lease_owner: "dead-worker",
      lease_expires_at: ago(-60_000),
      attempts: 1,
      started_at: ago(5_000),
    });
    assert.equal(await runner.runOnce(), false, "a live lease is respected");
    await patch(id, { lease_expires_at: ago(1_000) });
    assert.equal(await runner.runOnce(), true);
    const task = await row(id);
    assert.equal(task.status, "success");
    assert.deepEqual(JSON.parse(task.result ?? "null"), { n: 7 });
    assert.equal(task.attempts, 2);
    assert.equal(task.lease_owner, runner.owner);
    assert.deepEqual(
      runs.map((r) => r.id),
      [id],
    );
  });

  test("after three interrupted attempts a task fails (UNEXPECTED_ERROR) instead of running again", async () => {
    const { tasks, runner, runs } = instance();
    const { id } = await tasks.submit({ type: "test_count", params: { n: 1 }, ...taskOf() });
    await patch(id, {
      lease_owner: "dead-worker",
      lease_expires_at: ago(1_000),
      attempts: 3,
      started_at: ago(60_000),
    });
    assert.equal(await runner.runOnce(), true);
    const task = await row(id);
    assert.equal(task.status, "failed");
    assert.equal(task.result, null);
    assert.equal(errorOf(task)["error_code"], "UNEXPECTED_ERROR");
    assert.match(errorOf(task)["message"] ?? "", /interrupted 3 times/);
    assert.equal(runs.length, 0);
  });

  test("a task past its 30 minutes ends failed with a timeout, whether found late or still running", async () => {
    const late = instance();
    const { id } = await late.tasks.submit({ type: "test_count", params: { n: 1 }, ...taskOf() });
    await patch(id, {
      lease_owner: "dead-worker",
      lease_expires_at: ago(1_000),
      attempts: 1,
      started_at: ago(31 * 60_000),
    });
    assert.equal(await late.runner.runOnce(), true);
    const found = await row(id);
    assert.equal(found.status, "failed");
    assert.equal(errorOf(found)["error_code"], "TIMEOUT");
    assert.match(errorOf(found)["message"] ?? "", /30 minutes/);
    assert.equal(late.runs.length, 0);

    const running = instance(env().store, { timeLimitMs: 300 });
    const held = await running.tasks.submit({ type: "test_hold", params: {}, ...taskOf() });
    // The handler holds until it is told to stop: only the time limit ends this run.
    assert.equal(await within("the run past its time limit", running.runner.runOnce()), true);
    const stopped = await row(held.id);
    assert.equal(stopped.status, "failed");
    assert.equal(errorOf(stopped)["error_code"], "TIMEOUT");
    assert.ok(running.held.get(held.id)?.signal.aborted, "the handler was told to stop");
  });

  test("the lease is renewed while the handler works; a lost lease stops the work and writes nothing", async () => {
    // Renewed every second, so the lease stays seconds ahead of the clock even on a busy machine.
    const { tasks, runner, held } = instance(env().store, { leaseMs: 3_000 });
    const other = instance();
    const { id } = await tasks.submit({ type: "test_hold", params: {}, ...taskOf() });
    const run = runner.runOnce();
    await until("the handler started", () => held.has(id));
    const first = (await row(id)).lease_expires_at ?? "";
    await until("the lease was renewed", async () => ((await row(id)).lease_expires_at ?? "") > first);
    const renewed = await row(id);
    assert.ok((renewed.lease_expires_at ?? "") > toTimestamp(new Date()), "still ahead of the clock");
    assert.equal(await other.runner.runOnce(), false, "nobody else can take it");

    await patch(id, { lease_owner: "thief" });
    await until("the handler was stopped", () => held.get(id)?.signal.aborted === true);
    assert.ok(held.get(id)?.signal.reason instanceof LeaseLostError);
    await run;
    const task = await row(id);
    assert.equal(task.status, "processing", "the new owner decides");
    assert.equal(task.lease_owner, "thief");
  });

  test("handler errors: an AppError becomes the task error; anything else is UNEXPECTED_ERROR without internals", async () => {
    const { tasks, runner } = instance();
    const app = await tasks.submit({ type: "test_fail", params: { how: "app" }, ...taskOf() });
    const crash = await tasks.submit({ type: "test_fail", params: { how: "crash" }, ...taskOf() });
    await runner.runOnce();
    await runner.runOnce();
    const appError = errorOf(await row(app.id));
    assert.equal(appError["error_code"], "CONFLICT");
    assert.equal(appError["message"], "the thing is in the way");
    assert.ok(appError["support_link"]?.startsWith(PUBLIC_URL));
    const crashError = errorOf(await row(crash.id));
    assert.equal(crashError["error_code"], "UNEXPECTED_ERROR");
    assert.doesNotMatch(JSON.stringify(crashError), /secret internal detail/);
  });

  test("an outcome recorded inside a transaction that rolls back is rolled back with it", async () => {
    const { tasks, runner } = instance();
    const { id } = await tasks.submit({ type: "test_fail", params: { how: "rollback" }, ...taskOf() });
    await runner.runOnce();
    const task = await row(id);
    assert.equal(task.status, "failed");
    assert.equal(errorOf(task)["message"], "rolled back after succeeding");
  });

  test("stopping an instance gives its running task back, uncounted; another worker then finishes it", async () => {
    const first = instance();
    const { id } = await first.tasks.submit({ type: "test_hold", params: {}, ...taskOf() });
    first.runner.start();
    await until("the handler started", () => first.held.has(id));
    await first.runner.stop();
    assert.ok(first.held.get(id)?.signal.aborted);
    const given = await row(id);
    assert.equal(given.status, "processing");
    assert.equal(given.lease_owner, null);
    assert.equal(given.attempts, 0);

    const second = instance();
    const run = second.runner.runOnce();
    await until("taken again", () => second.held.has(id));
    second.held.get(id)?.open();
    assert.equal(await run, true);
    const task = await row(id);
    assert.equal(task.status, "success");
    assert.equal(task.attempts, 1);
  });

  test("wait answers as soon as the task finishes, in this instance or in another", async () => {
    const a = instance();
    const b = instance(secondStore());
    const { id } = await a.tasks.submit({ type: "test_hold", params: {}, ...taskOf() });
    a.runner.start();
    await until("the handler started", () => a.held.has(id));
    const env_ = env().acme.envs.production;
    // Waits of 60 s: answered well before the bound means answered when the task finished.
    const t0 = Date.now();
    const here = a.tasks.wait(env_, id, "test_hold", 60);
    const there = b.tasks.wait(env_, id, "test_hold", 60);
    await sleep(300);
    a.held.get(id)?.open();
    const [mine, theirs] = await Promise.all([here, there]);
    assert.equal(mine.status, "success");
    assert.equal(theirs.status, "success");
    assert.ok(Date.now() - t0 < 30_000, `answered after ${Date.now() - t0} ms`);
    const t1 = Date.now();
    assert.equal((await b.tasks.wait(env_, id, "test_hold", 60)).status, "success");
    assert.ok(Date.now() - t1 < 30_000, "a finished task answers without waiting for the bound");
  });

  test("finished tasks are purged after the retention period; running ones never", async () => {
    const { tasks, runner } = instance(env().store, { retentionDays: 7 });
    const ids: string[] = [];
    for (let n = 0; n < 4; n++)
      ids.push((await tasks.submit({ type: "test_count", params: { n }, ...taskOf() })).id);
    const [old, recent, failedOld, running] = ids as [string, string, string, string];
    await patch(old, { status: "success", finished_at: ago(8 * 86_400_000) });
    await patch(recent, { status: "success", finished_at: ago(6 * 86_400_000) });
    await patch(failedOld, { status: "failed", finished_at: ago(30 * 86_400_000) });
    await patch(running, {
      lease_owner: "someone",
      lease_expires_at: ago(-60_000),
      created_at: ago(40 * 86_400_000),
    });
    assert.equal(await runner.purge(), 2);
    const left = await env().store.db.selectFrom("tasks").select("id").execute();
    assert.deepEqual(left.map((t) => t.id).sort(), [recent, running].sort());
    const keepForever = instance(env().store, { retentionDays: 0 });
    assert.equal(await keepForever.runner.purge(), 0);
  });

  test("a task type no worker handles fails with a clear error", async () => {
    const { tasks, runner } = instance();
    const { id } = await tasks.submit({ type: "test_count", params: { n: 1 }, ...taskOf() });
    await patch(id, { type: "from_a_newer_version" });
    await runner.runOnce();
    const task = await row(id);
    assert.equal(task.status, "failed");
    assert.match(errorOf(task)["message"] ?? "", /from_a_newer_version/);
  });
});

test(
  "PostgreSQL: a task created by one instance wakes another's idle worker by NOTIFY, not by its poll",
  { skip: DIALECTS.find((d) => d.dialect === "postgres")?.skip ?? false },
  async () => {
    const env = await createTestEnv("postgres");
    // Instance B: its own pool and LISTEN connection; its worker polls once every ten minutes, so a task it runs
    // within this test's deadline reached it through the notification.
    const storeB = openStore({ databaseUrl: PG_URL, pgSchema: env.store.location.pgSchema!, pgPoolSize: 2 });
    const tasksA = createTasksService({ db: env.store.db, dialect: "postgres", publicUrl: PUBLIC_URL });
    const tasksB = createTasksService({ db: storeB.db, dialect: "postgres", publicUrl: PUBLIC_URL });
    const ran: number[] = [];
    tasksB.registry.register("test_count", async (context) => {
      ran.push(context.params.n);
      return { n: context.params.n };
    });
    const runnerB = createTaskRunner(tasksB, {
      pollMs: 600_000,
      notifiedPollMs: 600_000,
      leaseMs: config.taskLeaseSeconds * 1000,
      retentionDays: config.taskRetentionDays,
    });
    const listenerB = listenForChanges({
      clientConfig: storeB.pgClientConfig!,
      notifier: new ChangeNotifier(),
      onTaskCreated: () => runnerB.kick(),
    });
    runnerB.wakeBy(listenerB);
    try {
      await until("B's LISTEN connection", () => listenerB.listening);
      runnerB.start();
      const where = {
        organizationId: env.acme.id,
        projectId: env.acme.projectId,
        environmentId: env.acme.envs.production,
      };
      await sleep(100); // B's first look found nothing; it now sleeps for its poll's ten minutes
      for (let n = 1; n <= 3; n++) {
        const { id } = await tasksA.submit({ type: "test_count", params: { n }, ...where });
        await until(`B to run task ${n}`, () => ran.includes(n));
        const done = await tasksA.wait(env.acme.envs.production, id, "test_count", 10);
        assert.equal(done.status, "success");
      }
      // A task rolled back with its transaction is never announced (PostgreSQL drops the NOTIFY with it).
      await assert.rejects(
        env.store.db.transaction().execute(async (trx) => {
          await tasksA.insert(trx, { type: "test_count", params: { n: 4 }, ...where });
          throw new Error("rolled back");
        }),
      );
      await sleep(300);
      assert.deepEqual(ran, [1, 2, 3]);
    } finally {
      await runnerB.stop();
      await listenerB.close();
      await storeB.close();
      await env.app.close();
      await env.store.close();
    }
  },
);
