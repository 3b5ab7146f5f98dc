import { toTimestamp } from "../../lib/time.ts";
import { timeOfId } from "../decision-log/decision-log.repo.ts";
import { describeReason } from "../../pdp/engine/describe.ts";
import type { CheckQuery, Decision, Engine } from "../../pdp/engine/index.ts";

/**
 * What-if replay's arithmetic (docs/policy-as-code.md#what-if-replay): each check is decided by two engines, the
 * environment as it is (`before`) and the draft (`after`); the tally counts the checks, lists the ones whose
 * decision flips (up to `limit`) and counts by resource type and action. It holds no check once counted, so a
 * window of any size replays in bounded memory: the flips listed, the groups and a memo of recent checks.
 */

export interface ReplaySide {
  allow: boolean;
  /** The engine's explanation: the grant path of an allow, the closest miss of a deny. */
  reason: string;
}

export interface ReplayFlip {
  /** The logged decision's id and time (absent for checks given in the request). */
  id?: string;
  timestamp?: string;
  /** What was logged, when it differs from what the environment decides now. */
  logged?: boolean;
  user: string;
  action: string;
  /** As the check named it: a check of an instance may leave the tenant to the instance's. */
  resource: { type: string; key?: string; tenant?: string };
  before: ReplaySide;
  after: ReplaySide;
}

export interface ReplayGroup {
  resource_type: string;
  action: string;
  replayed: number;
  flipped: number;
  to_allow: number;
  to_deny: number;
}

export interface ReplayCounts {
  replayed: number;
  /** Logged entries that are not single checks (permission lists, tenant lists): nothing to replay. */
  skipped: number;
  flipped: number;
  to_allow: number;
  to_deny: number;
  /** Flips over replayed; 0 when nothing was replayed. */
  share: number;
  /** Logged decisions the environment no longer makes (its policy or facts changed since). */
  changed_since_logged: number;
  by_resource_action: ReplayGroup[];
  flips: ReplayFlip[];
  /** More decisions flipped than `flips` lists. */
  flips_truncated: boolean;
}

/** Checks remembered with their two decisions: logs repeat the same checks, and engines do not change mid-replay. */
const MEMO_MAX = 100_000;
/** Resource type and action pairs counted apart; past that (names from a client's checks) they count as `*`. */
const GROUPS_MAX = 10_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string";

/** An entry as a chunk stores it (docs/pdp.md): columns, and the whole check in `input` when it says more. */
export interface LoggedEntry {
  id?: unknown;
  user_key?: unknown;
  action?: unknown;
  resource_type?: unknown;
  resource_key?: unknown;
  tenant?: unknown;
  decision?: unknown;
  input?: unknown;
}

/**
 * The check a logged entry made, or undefined when the entry is not a single check. `memo` names a check the
 * entry's columns say all of; one with attributes or context (its `input`) is decided afresh, as writing its key
 * would cost about as much as deciding it.
 */
function loggedCheck(e: LoggedEntry): { query: CheckQuery; memo?: string } | undefined {
  if (typeof e.decision !== "boolean") return undefined;
  const input = e.input;
  if (isObj(input) && isObj(input["user"]) && str(input["action"]) && isObj(input["resource"])) {
    const user = input["user"];
    const resource = input["resource"];
    if (str(user["key"]) && str(resource["type"])) return { query: input as unknown as CheckQuery };
  }
  if (!str(e.user_key) || !str(e.action) || !str(e.resource_type)) return undefined;
  const key = str(e.resource_key) ? e.resource_key : undefined;
  const tenant = str(e.tenant) ? e.tenant : undefined;
  return {
    query: {
      user: { key: e.user_key },
      action: e.action,
      resource: { type: e.resource_type, ...(key !== undefined && { key }), ...(tenant && { tenant }) },
    },
    memo: `${e.user_key}\u0000${e.action}\u0000${e.resource_type}\u0000${key ?? ""}\u0000${tenant ?? ""}`,
  };
}

/** A stored chunk's entries; none when its text is not a JSON array. */
export function parseChunk(text: string): LoggedEntry[] {
  try {
    const entries: unknown = JSON.parse(text);
    return Array.isArray(entries) ? (entries as LoggedEntry[]) : [];
  } catch {
    return [];
  }
}

const side = (d: Decision): ReplaySide => ({ allow: d.allow, reason: describeReason(d.reason) ?? "" });

export class ReplayTally {
  private readonly counts = { replayed: 0, skipped: 0, flipped: 0, to_allow: 0, to_deny: 0, changed: 0 };
  /** By resource type, then action. */
  private readonly groups = new Map<string, Map<string, ReplayGroup>>();
  private groupCount = 0;
  private readonly flips: ReplayFlip[] = [];
  private memo = new Map<string, [Decision, Decision]>();

  constructor(
    private readonly before: Engine,
    private readonly after: Engine,
    private readonly limit: number,
  ) {}

  /** One check: `memo` names it for the memo (undefined: decide it afresh); `logged` is the log's entry. */
  check(query: CheckQuery, memo?: string, logged?: { id: string; allow: boolean }): void {
    let pair = memo === undefined ? undefined : this.memo.get(memo);
    if (pair === undefined) {
      pair = [this.before.check(query), this.after.check(query)];
      if (memo !== undefined) {
        if (this.memo.size >= MEMO_MAX) this.memo = new Map();
        this.memo.set(memo, pair);
      }
    }
    const [was, now] = pair;
    const c = this.counts;
    c.replayed++;
    if (logged !== undefined && logged.allow !== was.allow) c.changed++;
    const group = this.group(query.resource.type, query.action);
    group.replayed++;
    if (was.allow === now.allow) return;
    c.flipped++;
    group.flipped++;
    if (now.allow) {
      c.to_allow++;
      group.to_allow++;
    } else {
      c.to_deny++;
      group.to_deny++;
    }
    if (this.flips.length < this.limit) this.flips.push(this.flip(query, was, now, logged));
  }

  /** The entries [start, end) of a chunk (`parseChunk`) whose ids are in [fromId, toId). */
  entries(entries: LoggedEntry[], start: number, end: number, fromId: string, toId: string): void {
    for (let i = start; i < end && i < entries.length; i++) {
      const e = entries[i]!;
      if (!str(e.id) || e.id < fromId || e.id >= toId) continue;
      const found = loggedCheck(e);
      if (found === undefined) this.counts.skipped++;
      else this.check(found.query, found.memo, { id: e.id, allow: e.decision as boolean });
    }
  }

  result(): ReplayCounts {
    const c = this.counts;
    return {
      replayed: c.replayed,
      skipped: c.skipped,
      flipped: c.flipped,
      to_allow: c.to_allow,
      to_deny: c.to_deny,
      share: c.replayed === 0 ? 0 : c.flipped / c.replayed,
      changed_since_logged: c.changed,
      by_resource_action: [...this.groups.values()]
        .flatMap((byAction) => [...byAction.values()])
        .sort(
          (a, b) =>
            b.flipped - a.flipped ||
            a.resource_type.localeCompare(b.resource_type) ||
            a.action.localeCompare(b.action),
        ),
      flips: this.flips,
      flips_truncated: c.flipped > this.flips.length,
    };
  }

  private group(type: string, action: string): ReplayGroup {
    let byAction = this.groups.get(type);
    let group = byAction?.get(action);
    if (group !== undefined) return group;
    if (this.groupCount >= GROUPS_MAX && type !== "*") return this.group("*", "*");
    if (byAction === undefined) this.groups.set(type, (byAction = new Map()));
    group = { resource_type: type, action, replayed: 0, flipped: 0, to_allow: 0, to_deny: 0 };
    byAction.set(action, group);
    this.groupCount++;
    return group;
  }

  private flip(
    query: CheckQuery,
    was: Decision,
    now: Decision,
    logged: { id: string; allow: boolean } | undefined,
  ): ReplayFlip {
    const r = query.resource;
    return {
      ...(logged && { id: logged.id, timestamp: toTimestamp(new Date(timeOfId(logged.id))) }),
      ...(logged && logged.allow !== was.allow && { logged: logged.allow }),
      user: query.user.key,
      action: query.action,
      resource: {
        type: r.type,
        ...(r.key !== undefined && { key: r.key }),
        ...(r.tenant !== undefined && { tenant: r.tenant }),
      },
      before: side(was),
      after: side(now),
    };
  }
}
