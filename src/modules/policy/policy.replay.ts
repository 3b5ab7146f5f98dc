import type { Kysely } from "kysely";
import type { Store } from "../../db/store.ts";
import type { Database } from "../../db/types.ts";
import { findEnvironment } from "../../domain/environment-records.ts";
import { readPolicy } from "../../domain/environment-snapshot.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { snapshotPages } from "../../domain/snapshot-stream.ts";
import { AppError, invalid, notFound } from "../../lib/errors.ts";
import { toTimestamp } from "../../lib/time.ts";
import { createEngine, type CheckQuery, type EnvironmentData } from "../../pdp/engine/index.ts";
import { decisionLogChunks, idAt } from "../decision-log/decision-log.repo.ts";
import { engineDataFromPolicy } from "./policy.engine.ts";
import { parsePolicy } from "./policy.format.ts";
import type { PolicyReplayBody } from "./policy.schemas.ts";
import { parseChunk, ReplayTally, type ReplayCounts } from "./replay-tally.ts";

/** The window replayed when the request names none: the last 24 hours. */
const DEFAULT_WINDOW_S = 86_400;
/** Flips listed when the request does not say. */
const DEFAULT_LIMIT = 100;
/** Logged decisions replayed between two turns of the event loop. */
const SLICE = 250;
/** Facts per snapshot page: each page is one synchronous read on SQLite, so a small page keeps the loop turning. */
const SNAPSHOT_PAGE = 1000;

export interface ReplayResult extends ReplayCounts {
  /** The environment's revision the replay compared against. */
  revision: number;
  draft: "policy" | "environment";
  source: "decision_log" | "checks";
  from?: string;
  until?: string;
  message: string;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A check as the PDP takes it ("user", "type:key") in the engine's shape. */
function engineCheck(c: NonNullable<PolicyReplayBody["checks"]>[number]): CheckQuery {
  const user = typeof c.user === "string" ? { key: c.user } : c.user;
  let resource = c.resource;
  if (typeof resource === "string") {
    const at = resource.indexOf(":");
    resource = at < 0 ? { type: resource } : { type: resource.slice(0, at), key: resource.slice(at + 1) };
  }
  return { user, action: c.action, resource, ...(c.context && { context: c.context }) };
}

export function createPolicyReplay(deps: { store: Store; readDb: Kysely<Database> }) {
  const { store, readDb } = deps;

  /** The draft's policy, as the engine loads it: a policy file, or another environment's policy. */
  async function draftPolicy(scope: EnvScope, draft: PolicyReplayBody["draft"]): Promise<EnvironmentData> {
    if ((draft.policy === undefined) === (draft.environment === undefined)) {
      throw invalid("the draft is one of a policy file (`policy`) and an environment (`environment`)", [
        "body",
        "draft",
      ]);
    }
    if (draft.policy !== undefined) return engineDataFromPolicy(parsePolicy(draft.policy));
    if (draft.revision !== undefined) {
      throw invalid("`revision` goes with a policy file (a plan), not an environment", [
        "body",
        "draft",
        "revision",
      ]);
    }
    const other = await findEnvironment(store.db, scope.project.id, draft.environment!);
    if (!other) throw notFound("environment", draft.environment!);
    return readPolicy(store.db, other.id);
  }

  /**
   * Both engines from one read of the environment: its own policy and facts (`before`), and the draft's policy
   * with the same facts (`after`). 409 when a plan's revision is no longer the environment's.
   */
  async function engines(scope: EnvScope, draft: PolicyReplayBody["draft"], policy: EnvironmentData) {
    const snapshot = await snapshotPages(store, scope.environment.id, SNAPSHOT_PAGE);
    if (draft.revision !== undefined && draft.revision !== snapshot.revision) {
      await snapshot.close();
      throw new AppError(
        "CONFLICT",
        `the environment changed since the plan (plan at revision ${draft.revision}, now ${snapshot.revision}); plan again`,
        { plan_revision: draft.revision, current_revision: snapshot.revision },
      );
    }
    const before = createEngine();
    const after = createEngine();
    let first = true;
    for await (const page of snapshot.pages) {
      before.loadPage(page);
      // The first page is the environment's policy; the draft keeps its proxy configs (no policy file has them).
      after.loadPage(first ? { ...policy, proxy_configs: page.proxy_configs ?? [] } : page);
      first = false;
      await nextTurn();
    }
    return { before, after, revision: snapshot.revision };
  }

  return {
    /**
     * Replays a window of the decision log (or the request's checks) against the draft: the log is read a few
     * chunks at a time and each chunk's checks are counted and let go, with a turn of the event loop every
     * `SLICE` decisions, so neither memory nor the loop's longest hold grows with the window.
     */
    async replay(scope: EnvScope, body: PolicyReplayBody): Promise<ReplayResult> {
      const until = body.timestamp_to ?? Math.floor(Date.now() / 1000);
      const from = body.timestamp_from ?? until - DEFAULT_WINDOW_S;
      if (body.checks === undefined && from > until) {
        throw invalid("timestamp_from must not be after timestamp_to", ["body", "timestamp_from"]);
      }
      const policy = await draftPolicy(scope, body.draft);
      const { before, after, revision } = await engines(scope, body.draft, policy);
      const tally = new ReplayTally(before, after, body.limit ?? DEFAULT_LIMIT);
      const head = {
        revision,
        draft: body.draft.policy !== undefined ? ("policy" as const) : ("environment" as const),
      };
      if (body.checks !== undefined) {
        for (const [i, c] of body.checks.entries()) {
          tally.check(engineCheck(c));
          if (i % SLICE === SLICE - 1) await nextTurn();
        }
        const counts = tally.result();
        return { ...head, source: "checks", ...counts, message: summary(counts, "the checks") };
      }
      const fromMs = from * 1000;
      const toMs = until * 1000 + 999;
      const [fromId, toId] = [idAt(fromMs), idAt(toMs + 1)];
      for await (const text of decisionLogChunks(readDb, scope.environment.id, fromMs, toMs)) {
        const entries = parseChunk(text);
        for (let at = 0; at < entries.length; at += SLICE) {
          tally.entries(entries, at, at + SLICE, fromId, toId);
          await nextTurn();
        }
      }
      const counts = tally.result();
      return {
        ...head,
        source: "decision_log",
        from: toTimestamp(new Date(fromMs)),
        until: toTimestamp(new Date(until * 1000)),
        ...counts,
        message:
          counts.replayed === 0
            ? `no decisions to replay in the window${counts.skipped > 0 ? ` (${counts.skipped} logged queries are not single checks)` : ""}`
            : summary(counts, "the window's decisions"),
      };
    },
  };
}

function summary(c: ReplayCounts, what: string): string {
  if (c.replayed === 0) return `no checks to replay in ${what}`;
  const percent = (c.share * 100).toFixed(c.share > 0 && c.share < 0.001 ? 4 : 1);
  return `${c.flipped} of ${c.replayed} of ${what} flip (${percent}%): ${c.to_deny} allow -> deny, ${c.to_allow} deny -> allow`;
}

export type PolicyReplay = ReturnType<typeof createPolicyReplay>;
