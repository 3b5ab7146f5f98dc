import type { FastifyBaseLogger, FastifyInstance } from "fastify";

/** What reports a failure that a database outage explains (src/db/outage.ts): true when it took the error. */
export interface FailureReporter {
  report(error: unknown, log: FastifyBaseLogger): boolean;
}

/**
 * Runs `job` once when the app is ready and then every `intervalMs`, one run at a time; a failure is logged and
 * the next run tries again. Stops (after the run in progress) when the app closes.
 */
export function schedulePeriodic(
  app: FastifyInstance,
  name: string,
  intervalMs: number,
  job: () => Promise<number>,
  outage?: FailureReporter,
): void {
  let running: Promise<void> | null = null;
  const run = () => {
    running ??= job()
      .then((count) => {
        if (count > 0) app.log.info({ count }, `${name}: done`);
      })
      .catch((err: unknown) => {
        // A database outage is logged once, by `outage`.
        if (!outage?.report(err, app.log)) app.log.warn({ err }, `${name}: failed; it runs again later`);
      })
      .finally(() => {
        running = null;
      });
  };
  let timer: NodeJS.Timeout | undefined;
  app.addHook("onReady", async () => {
    run();
    timer = setInterval(run, intervalMs);
    timer.unref();
  });
  app.addHook("onClose", async () => {
    clearInterval(timer);
    await running;
  });
}
