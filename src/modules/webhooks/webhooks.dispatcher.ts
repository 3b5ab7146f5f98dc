import type { FastifyBaseLogger } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Dialect } from "../../db/store.ts";
import type { ChangeNotifier } from "../../changes/feed.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import type { FailureReporter } from "../../lib/periodic.ts";
import { newId } from "../../lib/ids.ts";
import { toTimestamp } from "../../lib/time.ts";
import {
  claimDeliveries,
  disableSubscription,
  recordAttempts,
  type AttemptOutcome,
  type ClaimedDelivery,
} from "./webhooks.repo.ts";
import type { SendOutcome, SignedDelivery } from "./webhooks.sender.ts";
import { createSenderThread } from "./webhooks.sender-thread.ts";
import { enqueueFeed, environmentsBehind, payloadOf } from "./webhooks.outbox.ts";

/** Due deliveries claimed per claim. */
const BATCH = 64;
/**
 * After a commit wakes the sender, it waits this long so that one round reads many writes' changes: one pass over
 * the feed, one delivery per event type and one transaction for the outcomes, whatever the number of writes.
 */
const GATHER_MS = 250;
/** The longest wait between two claims of due deliveries (retries); a commit in this process wakes the sender. */
const IDLE_MS = 1000;
/**
 * How often the sender looks for environments whose feed a subscription has not covered, besides the ones it is
 * told of (another instance's writes are told through PostgreSQL's notifications; this covers a sender that was down).
 */
const SWEEP_MS = 30_000;
/** The longest wait between two attempts of one delivery. */
const MAX_DELAY_MS = 3_600_000;

/** The attempt of a delivery whose subscription's secret this server cannot decrypt. */
const UNDECRYPTABLE: SendOutcome = {
  latencyMs: 0,
  error: "the secret cannot be decrypted with this server's GATEHOUSE_SECRET_KEY",
};

/** One attempt's result: the delivery's new state, and why to disable its subscription when it gave up. */
interface Outcome {
  delivery: ClaimedDelivery;
  set: AttemptOutcome;
  disable?: string;
}

export interface DispatcherOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  box: SecretBox;
  notifier: ChangeNotifier;
  log: FastifyBaseLogger;
  outage: FailureReporter;
  timeoutMs: number;
  retryBaseMs: number;
  retrySeconds: number;
  allowPrivate: boolean;
}

/** The wait before attempt `n + 1` after `n` failed ones: doubling from the base, jittered, at most an hour. */
export const retryDelayMs = (baseMs: number, failed: number): number =>
  Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.min(failed - 1, 30)) * (0.8 + Math.random() * 0.4);

/**
 * The sender of one instance: claims due deliveries under a lease, has its thread sign and send them
 * (webhooks.sender-thread.ts), records each outcome, schedules retries, and gives a delivery up (disabling its
 * subscription) once it has failed for the retry window.
 */
export function createWebhookDispatcher(options: DispatcherOptions) {
  const { db, dialect, box, log } = options;
  const owner = newId();
  const leaseMs = options.timeoutMs * 2 + 30_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let gathering = false;
  let stopped = true;
  let unsubscribe: (() => void) | undefined;
  /** Environments with revisions the sender has not passed over yet (webhooks.outbox.ts). */
  const dirty = new Set<string>();
  let swept = 0;
  /** When this sender last claimed due deliveries, and whether it must at its next round (woken, or a full claim). */
  let lastClaim = 0;
  let claimDue = true;
  const sender = createSenderThread(
    { timeoutMs: options.timeoutMs, allowPrivate: options.allowPrivate },
    log,
  );

  /** A delivery's new state after an attempt that ended with `sent`. */
  function outcomeOf(d: ClaimedDelivery, sent: SendOutcome): Outcome {
    const at = new Date();
    const ok = sent.statusCode !== undefined && sent.statusCode >= 200 && sent.statusCode < 300;
    const attempts = d.attempts + 1;
    const givenUp = !ok && at.getTime() - Date.parse(d.created_at) >= options.retrySeconds * 1000;
    const next = ok || givenUp ? at : new Date(at.getTime() + retryDelayMs(options.retryBaseMs, attempts));
    const why = sent.statusCode === undefined ? sent.error : `HTTP ${sent.statusCode}`;
    return {
      delivery: d,
      set: {
        id: d.id,
        status: ok ? "delivered" : givenUp ? "failed" : "pending",
        attempts,
        next_attempt_at: toTimestamp(next),
        last_attempt_at: toTimestamp(at),
        last_status_code: sent.statusCode ?? null,
        last_latency_ms: sent.latencyMs,
        last_response: sent.response ?? null,
        last_error: sent.error ?? null,
        delivered_at: ok ? toTimestamp(at) : null,
      },
      ...(givenUp && {
        disable:
          `a delivery failed for ${options.retrySeconds} s (${attempts} attempts; last: ${why}); ` +
          "fix the receiver, then enable the webhook again",
      }),
    };
  }

  /**
   * Writes a round's outcomes in one statement; a subscription whose delivery gave up is disabled in the same
   * transaction.
   */
  async function record(outcomes: Outcome[]): Promise<void> {
    const sets = outcomes.map((o) => o.set);
    if (!outcomes.some((o) => o.disable)) {
      await recordAttempts(db, owner, sets);
      return;
    }
    await db.transaction().execute(async (trx) => {
      const mine = await recordAttempts(trx, owner, sets);
      for (const o of outcomes) {
        if (o.disable && mine.has(o.delivery.id)) {
          await disableSubscription(trx, o.delivery.subscription_id, o.disable, o.set.last_attempt_at);
        }
      }
    });
  }

  /**
   * Turns the feed of the environments written since the last round into deliveries: with `lease`, leased to this
   * sender, to send in this round (else any sender claims them). Answers them, and whether a feed has more to read
   * at once; an environment another instance is passing over is left for the next round.
   */
  async function enqueue(lease?: { owner: string; expiresAt: string }) {
    if (Date.now() - swept >= SWEEP_MS) {
      for (const id of await environmentsBehind(db)) dirty.add(id);
      swept = Date.now();
    }
    let more = false;
    const deliveries: ClaimedDelivery[] = [];
    for (const environmentId of [...dirty]) {
      dirty.delete(environmentId);
      const pass = await enqueueFeed(db, environmentId, lease).catch((err: unknown) => {
        dirty.add(environmentId);
        throw err;
      });
      if (pass.result !== "done") dirty.add(environmentId);
      more ||= pass.result === "more";
      deliveries.push(...pass.deliveries);
    }
    return { more, deliveries };
  }

  /** One round: the feed's new deliveries, then the due ones sent. Answers whether it stopped at a limit. */
  async function round(): Promise<boolean> {
    const at = new Date();
    const lease = { owner, expiresAt: toTimestamp(new Date(at.getTime() + leaseMs)) };
    const written = await enqueue(lease);
    // The feed's new deliveries come leased; due ones (retries, redeliveries, events outside the feed, another
    // sender's expired leases) are claimed when woken, after a full claim, and at least every IDLE_MS.
    let due: ClaimedDelivery[] = [];
    if (claimDue || at.getTime() - lastClaim >= IDLE_MS) {
      lastClaim = at.getTime();
      due = await claimDeliveries(db, dialect, owner, toTimestamp(at), lease.expiresAt, BATCH);
      claimDue = due.length === BATCH;
    }
    const deliveries = [...written.deliveries, ...due];
    // A round's deliveries are mostly a few subscriptions': each secret is decrypted once per round.
    const secrets = new Map<string, string | undefined>();
    const secretOf = (sealed: string) => {
      if (!secrets.has(sealed)) secrets.set(sealed, box.open(sealed));
      return secrets.get(sealed);
    };
    const sendable: SignedDelivery[] = [];
    for (const d of deliveries) {
      const secret = secretOf(d.secret_sealed);
      if (secret !== undefined) sendable.push({ id: d.id, url: d.url, secret, body: await payloadOf(d) });
    }
    const outcomes = await sender.send(sendable);
    const sent = new Map(sendable.map((d, i) => [d.id, outcomes[i] as SendOutcome]));
    await record(deliveries.map((d) => outcomeOf(d, sent.get(d.id) ?? UNDECRYPTABLE)));
    return written.more || claimDue;
  }

  function schedule(ms: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(kick, ms);
    timer.unref();
  }

  /**
   * Runs rounds while they stop at a limit (more is due at once). A wake-up during a round runs another after
   * GATHER_MS, so that under a steady stream of writes a round carries many writes' changes.
   */
  function kick(): void {
    gathering = false;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    again = false;
    running = (async () => {
      let full = true;
      while (full && !stopped) {
        full = await round().catch((err: unknown) => {
          if (!options.outage.report(err, log)) log.warn({ err }, "webhook sender: a round failed");
          return false;
        });
      }
    })().finally(() => {
      running = undefined;
      gathering = again;
      schedule(again ? GATHER_MS : IDLE_MS);
    });
  }

  return {
    start(): void {
      if (!stopped) return;
      stopped = false;
      swept = 0;
      unsubscribe = options.notifier.subscribe((environmentId) => {
        dirty.add(environmentId);
        if (running) again = true;
        else if (!gathering) {
          gathering = true;
          schedule(GATHER_MS);
        }
      });
      kick();
    },
    /** Wakes the sender to claim what is due (a delivery was queued outside the change feed, or asked again). */
    wake(): void {
      claimDue = true;
      kick();
    },
    /**
     * Writes the deliveries of every revision this process has committed or heard of, as the subscriptions are
     * now: a subscription's change (its events, or disabling it) then applies to the writes answered after it.
     */
    async catchUp(): Promise<void> {
      await running;
      while (dirty.size > 0 && (await enqueue()).more) {
        // a feed with more to read: pass again
      }
      claimDue = true;
      kick();
    },
    async stop(): Promise<void> {
      stopped = true;
      unsubscribe?.();
      clearTimeout(timer);
      await running;
      await sender.stop();
    },
  };
}

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>;
