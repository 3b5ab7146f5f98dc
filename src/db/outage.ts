import { isDatabaseUnavailable } from "./errors.ts";

/** What an outage is logged through: a pino logger (the app's or a request's). */
export interface OutageLog {
  warn(fields: object, message: string): void;
  /** The database's return is logged here (at warn when absent). */
  info?(fields: object, message: string): void;
}

/** What a client is told (`Retry-After`, seconds) while the database is unavailable. */
export const RETRY_AFTER_SECONDS = 5;
/** How often the database is tried while it is away, to log its return without waiting for traffic. */
const PROBE_MS = 1000;

/**
 * Tells database outages from other errors and logs each outage once: the first error that means "unavailable"
 * logs one line, the others (every API call, every PDP sync and log shipment meanwhile) none, and a probe logs
 * the database's return. Nothing else depends on this state: requests always try the database, so service comes
 * back with the database, without a restart.
 */
export class DatabaseOutage {
  #since: number | undefined;
  #probe: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(private readonly ping: () => Promise<boolean>) {}

  /** True from the first error of an outage until the database answers again. */
  get down(): boolean {
    return this.#since !== undefined;
  }

  /** Returns whether `error` means the database is unavailable; the first of an outage is logged. */
  report(error: unknown, log: OutageLog): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    if (this.#since === undefined && !this.#closed) {
      this.#since = Date.now();
      const e = error as { code?: unknown; message?: unknown };
      // The code and message say why (refused, terminated, timed out); a stack would say nothing more.
      log.warn(
        { code: e.code, reason: e.message },
        "database unavailable: API calls get 503 and the PDP answers from memory until it is back",
      );
      this.#watch(log);
    }
    return true;
  }

  #watch(log: OutageLog): void {
    this.#probe = setTimeout(() => {
      void this.ping().then((up) => {
        if (this.#closed) return;
        if (!up) return this.#watch(log);
        const downForMs = Date.now() - (this.#since ?? Date.now());
        this.#since = undefined;
        (log.info ?? log.warn).call(log, { downForMs }, "database available again");
      });
    }, PROBE_MS);
    this.#probe.unref();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#probe);
  }
}
