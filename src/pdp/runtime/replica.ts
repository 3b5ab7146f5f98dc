import { setImmediate } from "node:timers/promises";
import { changesOf, type FeedEntry } from "../../changes/feed.ts";
import { createEngine, DEFAULT_LISTING_HISTORY, type Engine } from "../engine/index.ts";
import type { Change, EnvironmentData } from "../engine/types.ts";
import type { FeedSource, Snapshot } from "../storage.ts";

const ENGINE_KINDS = new Set([
  "resource",
  "role",
  "user",
  "tenant",
  "role_assignment",
  "resource_instance",
  "relationship_tuple",
  "condition_set",
  "condition_set_rule",
  "proxy_config",
]);

/**
 * Applies one feed entry (a change or a batch of them, all at once) to the engine. False, and nothing applied, when
 * it holds a change the engine has no incremental form for (e.g. a whole environment replaced): reload instead.
 */
export function applyEntry(engine: Engine, entry: FeedEntry<Change>): boolean {
  const changes = changesOf(entry);
  if (!changes.every((change) => ENGINE_KINDS.has(change.kind))) return false;
  engine.applyAll(changes);
  return true;
}

/**
 * An engine built page by page. The event loop runs between pages: a page read from SQLite resolves in microtasks
 * only, so without the yield a whole load would hold every other request back.
 */
async function buildFromPages(pages: AsyncIterable<EnvironmentData>): Promise<Engine> {
  const engine = createEngine();
  for await (const page of pages) {
    engine.loadPage(page);
    await setImmediate();
  }
  return engine;
}

interface Waiter {
  revision: number;
  resolve: (reached: boolean) => void;
  timer: NodeJS.Timeout;
}

/**
 * One environment's engine, kept at a known revision of the change feed. Catch-up is single-flight: a notification
 * during a catch-up schedules one more round rather than a parallel one, so changes apply exactly once, in order.
 */
export class Replica {
  /** Replaced whole by each load: the old engine answers until the new one is ready. */
  engine: Engine = createEngine();
  revision = -1;
  lastSyncAt = 0;
  /** When a check last asked for this copy (ms since the epoch); the embedded PDP lets idle copies go. */
  usedAt = Date.now();
  private running: Promise<void> | undefined;
  private again = false;
  private waiters: Waiter[] = [];

  /** `history`: writes each engine keeps so listing walks answer at their first page's revision (journal.ts). */
  constructor(
    private readonly source: FeedSource,
    private readonly history = DEFAULT_LISTING_HISTORY,
  ) {}

  async load(snapshot?: Snapshot): Promise<void> {
    const s = snapshot ?? (await this.source.snapshot());
    if ("engine" in s) this.engine = s.engine;
    else if ("data" in s) this.engine = createEngine(s.data);
    else this.engine = await buildFromPages(s.pages);
    this.revision = s.revision;
    this.engine.keepHistory(this.history);
    this.engine.markRevision(s.revision);
    this.lastSyncAt = Date.now();
    this.settleWaiters();
  }

  /** Applies everything the source has after our revision. */
  catchUp(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pull();
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async pull(): Promise<void> {
    for (;;) {
      const round = await this.source.changesAfter(this.revision);
      // The feed no longer keeps every change after our revision: applying what it has would skip the rest.
      if ("gone" in round) {
        await this.load();
        return;
      }
      const { changes, revision } = round;
      let reload = false;
      for (const entry of changes) {
        if (entry.revision <= this.revision) continue;
        if (!applyEntry(this.engine, entry)) {
          reload = true;
          break;
        }
        this.engine.markRevision(entry.revision);
      }
      if (reload) {
        await this.load();
        return;
      }
      const advanced = revision > this.revision;
      if (advanced) {
        this.revision = revision;
        this.engine.markRevision(revision);
      }
      this.lastSyncAt = Date.now();
      this.settleWaiters();
      if (!advanced || changes.length === 0) return;
    }
  }

  /** Resolves true once the replica holds `revision`, false after `timeoutMs`. */
  waitFor(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.revision >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        revision,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          resolve(this.revision >= revision);
        }, timeoutMs),
      };
      this.waiters.push(waiter);
      void this.catchUp().catch(() => {});
    });
  }

  private settleWaiters(): void {
    if (this.waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (this.revision >= w.revision) {
        clearTimeout(w.timer);
        w.resolve(true);
      } else still.push(w);
    }
    this.waiters = still;
  }
}
