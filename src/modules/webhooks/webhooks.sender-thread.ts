import { Worker } from "node:worker_threads";
import type { FastifyBaseLogger } from "fastify";
import type { SendOptions, SendOutcome, SignedDelivery } from "./webhooks.sender.ts";

/** One round's deliveries, posted to the thread. */
export interface SenderRound {
  round: number;
  deliveries: SignedDelivery[];
  options: SendOptions;
}

/** A round's outcomes, in its deliveries' order. */
export interface SenderReply {
  round: number;
  outcomes: SendOutcome[];
}

/**
 * The thread, from the entry beside this file: under dist/ the build's bundle; under src/ the TypeScript, through tsx
 * registered in the thread itself (tsx's `--import` registers itself in worker threads only on newer Node versions,
 * so the thread takes none of the process's flags and registers it once).
 */
function newWorker(): Worker {
  if (!import.meta.url.endsWith(".ts"))
    return new Worker(new URL("./webhooks.sender.worker.js", import.meta.url));
  const workerData = {
    tsx: import.meta.resolve("tsx/esm/api"),
    entry: new URL("./webhooks.sender.worker.ts", import.meta.url).href,
  };
  const bootstrap = `const { workerData } = require("node:worker_threads");
import(workerData.tsx).then((tsx) => { tsx.register(); return import(workerData.entry); });`;
  return new Worker(bootstrap, { eval: true, execArgv: [], workerData });
}

/** What a round's deliveries get when the thread dies before answering: an error, retried as any failed attempt. */
const LOST: SendOutcome = { latencyMs: 0, error: "the sender thread stopped before the answer" };

/**
 * The thread that signs and sends a dispatcher's deliveries (`sendSigned`), so that the HTTP client's work is not
 * on the server's event loop. It starts with the first round that has something to send (most servers never send a
 * webhook) and again after it died; an idle thread does not keep the process alive.
 */
export function createSenderThread(options: SendOptions, log: FastifyBaseLogger) {
  type Thread = { worker: Worker; rounds: Map<number, (outcomes: SendOutcome[]) => void> };
  let current: Thread | undefined;
  let next = 0;

  function start(): Thread {
    const worker = newWorker();
    const thread: Thread = { worker, rounds: new Map() };
    worker.on("message", (reply: SenderReply) => {
      const resolve = thread.rounds.get(reply.round);
      thread.rounds.delete(reply.round);
      if (thread.rounds.size === 0) worker.unref();
      resolve?.(reply.outcomes);
    });
    worker.on("error", (err) => log.error({ err }, "webhook sender: the sending thread failed"));
    worker.once("exit", () => {
      if (current === thread) current = undefined;
      for (const resolve of thread.rounds.values()) resolve([]);
      thread.rounds.clear();
    });
    // After the listeners: adding a message listener refs the worker again.
    worker.unref();
    return thread;
  }

  return {
    /** The outcomes of `deliveries`, in their order; never throws. */
    async send(deliveries: SignedDelivery[]): Promise<SendOutcome[]> {
      if (deliveries.length === 0) return [];
      let thread: Thread;
      try {
        thread = current ??= start();
      } catch (err) {
        log.error({ err }, "webhook sender: the sending thread cannot start");
        return deliveries.map(() => LOST);
      }
      const round = next++;
      const outcomes = await new Promise<SendOutcome[]>((resolve) => {
        thread.rounds.set(round, resolve);
        // A round in flight keeps the process alive, as its requests did on the main thread.
        thread.worker.ref();
        thread.worker.postMessage({ round, deliveries, options } satisfies SenderRound);
      });
      return deliveries.map((_, i) => outcomes[i] ?? LOST);
    },
    /** Ends the thread (a round in flight gets errors); a later round starts another. */
    async stop(): Promise<void> {
      const thread = current;
      current = undefined;
      await thread?.worker.terminate();
    },
  };
}
