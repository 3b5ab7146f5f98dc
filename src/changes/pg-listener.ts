import pg from "pg";
import { CHANGES_CHANNEL_SQL, TASK_CREATED_PAYLOAD, type ChangeNotifier } from "./feed.ts";

const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 10_000;

export interface ChangeListener {
  /** True while the LISTEN connection is up. */
  readonly listening: boolean;
  close(): Promise<void>;
}

/**
 * One dedicated PostgreSQL connection per instance that LISTENs for the revisions other instances commit
 * (`appendChanges` notifies in the writing transaction) and passes each to this instance's notifier, which wakes
 * the embedded PDP's copy of that environment and the standalone PDPs' long polls. When the connection drops it is
 * opened again with backoff; meanwhile the pollers that remain in place see the writes, only later. The same
 * channel carries `TASK_CREATED_PAYLOAD` when any instance creates a background task: `onTaskCreated` wakes this
 * instance's task worker, which then polls only slowly.
 */
export function listenForChanges(options: {
  clientConfig: pg.ClientConfig;
  notifier: ChangeNotifier;
  onTaskCreated?: () => void;
  onError?: (error: unknown) => void;
}): ChangeListener {
  let client: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let backoff = MIN_BACKOFF_MS;
  let retry: NodeJS.Timeout | undefined;

  function drop(c: pg.Client, error?: unknown): void {
    if (client !== c) return;
    client = undefined;
    listening = false;
    if (error !== undefined && !closed) options.onError?.(error);
    c.end().catch(() => {});
    if (closed) return;
    retry = setTimeout(() => void connect(), backoff);
    retry.unref();
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }

  async function connect(): Promise<void> {
    const c = new pg.Client({ ...options.clientConfig, application_name: "gatehouse-listen" });
    client = c;
    let channel = "";
    c.on("error", (error) => drop(c, error));
    c.on("end", () => drop(c, new Error("the LISTEN connection to PostgreSQL ended")));
    c.on("notification", (message) => {
      if (message.channel !== channel || !message.payload) return;
      if (message.payload === TASK_CREATED_PAYLOAD) return options.onTaskCreated?.();
      const at = message.payload.lastIndexOf(":");
      const revision = Number(message.payload.slice(at + 1));
      if (at > 0 && Number.isSafeInteger(revision)) {
        void options.notifier.notify(message.payload.slice(0, at), revision);
      }
    });
    try {
      await c.connect();
      const { rows } = await c.query<{ channel: string }>(`select ${CHANGES_CHANNEL_SQL} as channel`);
      channel = rows[0]?.channel ?? "";
      // The name is 'gatehouse_changes_' and hexadecimal digits: safe inside quotes.
      await c.query(`listen "${channel}"`);
      if (client !== c) return;
      listening = true;
      backoff = MIN_BACKOFF_MS;
    } catch (error) {
      drop(c, error);
    }
  }

  void connect();
  return {
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      listening = false;
      await c?.end().catch(() => {});
    },
  };
}
