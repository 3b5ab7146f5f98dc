import { newId } from "../lib/ids.ts";
import { now } from "../lib/time.ts";
import type { Db } from "../db/db.ts";
import { QueryShapes } from "../db/query-shapes.ts";

/**
 * The events Gatehouse gives out (webhooks, the public change stream), in a shape of their own that stays stable
 * whatever the PDP's internal change records become (docs/events.md).
 */

/** A change as the feed keeps it (feed.ts's FeedRecord): `batch` records list several in `data`. */
interface FeedRecord {
  kind: string;
  op: string;
  data: unknown;
}

/** The feed's kinds that are facts; the others are the schema (policy). */
const FACT_KINDS = new Set(["user", "tenant", "role_assignment", "resource_instance", "relationship_tuple"]);

/** One change of an environment as the public stream and the webhooks show it. */
export interface PublicChange {
  revision: number;
  /** the change's place within its revision, from 0 */
  seq: number;
  /** when the revision was written (ISO 8601) */
  at: string;
  /** `facts` or `schema` */
  category: "facts" | "schema";
  object_type: string;
  action: "upsert" | "delete";
  /** the object as it is now (upsert), or what names it (delete) */
  object: unknown;
}

/** The public changes of one revision's feed records, batches spread, numbered from 0. */
export function publicChanges(revision: number, at: string, records: readonly FeedRecord[]): PublicChange[] {
  const out: PublicChange[] = [];
  for (const record of records) {
    for (const change of record.kind === "batch" ? (record.data as FeedRecord[]) : [record]) {
      out.push({
        revision,
        seq: out.length,
        at,
        category: FACT_KINDS.has(change.kind) ? "facts" : "schema",
        object_type: change.kind,
        action: change.op === "delete" ? "delete" : "upsert",
        object: change.data,
      });
    }
  }
  return out;
}

/** Where an event happened: an organization, or one environment of it. */
export interface EventScope {
  organization_id: string;
  project_id: string | null;
  environment_id: string | null;
}

export interface GatehouseEvent {
  type: string;
  data: Record<string, unknown>;
}

/** A subscription as a write's transaction sees it: its id and the event types (or patterns) it wants. */
export interface EventTarget {
  id: string;
  events: string[];
}

/** `*` takes every event, `facts.*` every type that starts with `facts.`, anything else that type only. */
export function wants(patterns: readonly string[], type: string): boolean {
  return patterns.some(
    (p) => p === "*" || p === type || (p.endsWith(".*") && type.startsWith(p.slice(0, -1))),
  );
}

/** The subscriptions' lookup, built once per shape (QueryShapes): every write to an environment runs it. */
const shapes = new QueryShapes();

/** The enabled subscriptions of a scope: the organization's own, and the environment's when it names one. */
export async function eventTargets(db: Db, scope: EventScope): Promise<EventTarget[]> {
  const { organization_id, environment_id } = scope;
  const rows = await shapes.rows(
    db,
    environment_id === null ? "targets/organization" : "targets/environment",
    environment_id === null ? [organization_id] : [organization_id, environment_id],
    ([organizationId, environmentId]) =>
      db
        .selectFrom("webhook_subscriptions")
        .select(["id", "events"])
        .where("organization_id", "=", organizationId as string)
        .where("enabled", "=", 1)
        .where((eb) =>
          environmentId === undefined
            ? eb("environment_id", "is", null)
            : eb.or([eb("environment_id", "is", null), eb("environment_id", "=", environmentId)]),
        ),
  );
  return rows.map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[] }));
}

/** A delivery's row before it is written: the event's type and body, for one subscription. */
interface DeliveryDraft {
  subscription_id: string;
  event_type: string;
  payload: string;
}

/** Each event with each target that wants it (`wants`), event by event. */
export function addressed<E extends { type: string }, T extends EventTarget>(
  events: readonly E[],
  targets: readonly T[],
): { event: E; target: T }[] {
  const out = [];
  for (const event of events) {
    for (const target of targets) if (wants(target.events, event.type)) out.push({ event, target });
  }
  return out;
}

/** Writes drafts as pending deliveries, due at once. */
export async function insertDeliveries(trx: Db, drafts: readonly DeliveryDraft[], at: string): Promise<void> {
  if (drafts.length === 0) return;
  const rows = drafts.map((d) => ({
    id: newId(),
    ...d,
    status: "pending",
    attempts: 0,
    next_attempt_at: at,
    created_at: at,
  }));
  await shapes.insert(trx, "deliveries", rows, (some) => trx.insertInto("webhook_deliveries").values(some));
}

/**
 * Writes one delivery per event and subscription that wants it, in the caller's transaction: the deliveries
 * commit or roll back with the change they announce (the webhooks' outbox).
 */
export async function enqueueEvents(
  trx: Db,
  scope: EventScope,
  events: readonly GatehouseEvent[],
): Promise<void> {
  if (events.length === 0) return;
  const targets = await eventTargets(trx, scope);
  if (targets.length === 0) return;
  const at = now();
  const bodies = events.map((e) => ({
    type: e.type,
    payload: JSON.stringify({ type: e.type, timestamp: at, data: { ...scope, ...e.data } }),
  }));
  const drafts = addressed(bodies, targets).map(({ event, target }) => ({
    subscription_id: target.id,
    event_type: event.type,
    payload: event.payload,
  }));
  await insertDeliveries(trx, drafts, at);
}

/** Changes per event at most, so that a bulk write's deliveries stay modest bodies (as the feed's batches do). */
const CHANGES_PER_EVENT = 1000;

/**
 * An event's body cut where its revision goes, for a write that has not taken its revision yet:
 * `parts.join(String(revision))` is the body. PostgreSQL joins them in the statement that takes the revision.
 */
export interface EventBody {
  type: string;
  parts: string[];
}

/**
 * The events of one revision of an environment's feed: one per category and object type with its changes (more
 * when a bulk write changed more than CHANGES_PER_EVENT of one type). Each body is what enqueueEvents would write
 * for `{type, data: {revision, changes}}` at `at`, built around the revision (which appears once in `data` and
 * once in each change): `{"type","timestamp","data":{<scope>,"revision","changes":[{"revision",...}]}}`.
 */
export function feedEventBodies(scope: EventScope, at: string, records: readonly FeedRecord[]): EventBody[] {
  const byType = new Map<string, PublicChange[]>();
  for (const change of publicChanges(0, at, records)) {
    const type = `${change.category}.${change.object_type}`;
    const list = byType.get(type);
    if (list) list.push(change);
    else byType.set(type, [change]);
  }
  const { organization_id, project_id, environment_id } = scope;
  const scopeJson = JSON.stringify({ organization_id, project_id, environment_id }).slice(0, -1);
  const bodies: EventBody[] = [];
  for (const [type, changes] of byType) {
    for (let start = 0; start < changes.length; start += CHANGES_PER_EVENT) {
      const parts = [
        `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(at)},"data":${scopeJson},"revision":`,
      ];
      let next = ',"changes":[{"revision":';
      for (const { revision: _, ...rest } of changes.slice(start, start + CHANGES_PER_EVENT)) {
        parts.push(next);
        next = `,${JSON.stringify(rest).slice(1)},{"revision":`;
      }
      parts.push(`${next.slice(0, -',{"revision":'.length)}]}}`);
      bodies.push({ type, parts });
    }
  }
  return bodies;
}

/** A subscription as the feed's statement reads it (PostgreSQL): its `events` also as stored, to compare. */
export interface StoredTarget extends EventTarget {
  stored: string;
}

/** What an environment's last write found: its scope and the subscriptions that see it. */
export interface KnownTargets {
  scope: EventScope;
  targets: StoredTarget[];
}

/**
 * What each environment's last write in this process found: the next write's guess, whose deliveries go in the
 * statement that takes the revision (feed.ts). A guess is never trusted: that statement writes a guessed delivery
 * only for a subscription that is still enabled with the same events, and reads the subscriptions again.
 */
const known = new Map<string, KnownTargets>();
/** Environments remembered at most; past it the oldest is forgotten (its next write just guesses nothing). */
const REMEMBERED = 10_000;

export const knownTargets = (environmentId: string): KnownTargets | undefined => known.get(environmentId);

export function rememberTargets(environmentId: string, found: KnownTargets): void {
  known.delete(environmentId);
  known.set(environmentId, found);
  if (known.size > REMEMBERED) known.delete(known.keys().next().value as string);
}

/** The deliveries of one revision's event bodies to the targets that want them. */
export const feedDeliveries = (
  bodies: readonly EventBody[],
  targets: readonly EventTarget[],
  revision: number,
) =>
  addressed(bodies, targets).map(({ event, target }) => ({
    subscription_id: target.id,
    event_type: event.type,
    payload: event.parts.join(String(revision)),
  }));

/** An organization's own scope: its subscriptions see the event, no environment's does. */
export const organizationScope = (organizationId: string): EventScope => ({
  organization_id: organizationId,
  project_id: null,
  environment_id: null,
});

/** One event, in the caller's transaction (enqueueEvents). */
export const enqueueEvent = (trx: Db, scope: EventScope, type: string, data: Record<string, unknown>) =>
  enqueueEvents(trx, scope, [{ type, data }]);
