import fp from "fastify-plugin";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { Config } from "../config.ts";
import type { ChangeNotifier } from "../changes/feed.ts";
import type { Dialect } from "../db/store.ts";
import type { Database } from "../db/types.ts";
import type { DatabaseOutage } from "../db/outage.ts";
import { createTasksService, type TasksService } from "./tasks.service.ts";
import { createTaskRunner, type TaskRunner } from "./task-runner.ts";

declare module "fastify" {
  interface FastifyInstance {
    tasks: TasksService;
    /** Created here, started by the server (tests start it themselves); closing the app stops it. */
    taskRunner: TaskRunner;
  }
}

/** Background tasks for the whole app: modules register their task types with `app.tasks.registry`. */
export const tasksPlugin = fp(
  async (
    app: FastifyInstance,
    deps: {
      db: Kysely<Database>;
      dialect: Dialect;
      config: Pick<Config, "publicUrl" | "taskRetentionDays" | "taskLeaseSeconds">;
      notifier: ChangeNotifier;
      outage: DatabaseOutage;
    },
  ) => {
    const { db, dialect, config } = deps;
    const tasks = createTasksService({ db, dialect, publicUrl: config.publicUrl });
    const taskRunner = createTaskRunner(tasks, {
      retentionDays: config.taskRetentionDays,
      leaseMs: config.taskLeaseSeconds * 1000,
      notifier: deps.notifier,
      log: app.log,
      outage: deps.outage,
    });
    app.addHook("preClose", async () => tasks.close());
    app.addHook("onClose", () => taskRunner.stop());
    app.decorate("tasks", tasks);
    app.decorate("taskRunner", taskRunner);
  },
  { name: "tasks" },
);
