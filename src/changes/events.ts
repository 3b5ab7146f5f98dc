import { newId } from "../lib/ids.ts";
import { now } from "../lib/time.ts";
import type { Db } from "../db/db.ts";

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

/** The enabled subscriptions of a scope: the organization's own, and the environment's when it names one. */
export async function eventTargets(db: Db, scope: EventScope): Promise<EventTarget[]> {
  const rows = await db
    .selectFrom("webhook_subscriptions")
    .select(["id", "events"])
    .where("organization_id", "=", scope.organization_id)
    .where("enabled", "=", 1)
    .where((eb) =>
      scope.environment_id === null
        ? eb("environment_id", "is", null)
        : eb.or([eb("environment_id", "is", null), eb("environment_id", "=", scope.environment_id)]),
    )
    .execute();
  return rows.map((r) => ({ id: r.id, events: JSON.parse(r.events) as string[] }));
}

/**
 * Writes one delivery per event and subscription that wants it, in the caller's transaction: the deliveries
 * commit or roll back with the change they announce (the webhooks' outbox).
 */
export async function enqueueEvents(
  trx: Db,
  scope: EventScope,
  events: readonly GatehouseEvent[],
  targets?: readonly EventTarget[],
): Promise<void> {
  if (events.length === 0) return;
  const subscribers = targets ?? (await eventTargets(trx, scope));
  if (subscribers.length === 0) return;
  const at = now();
  const rows = [];
  for (const event of events) {
    const payload = JSON.stringify({ type: event.type, timestamp: at, data: { ...scope, ...event.data } });
    for (const target of subscribers) {
      if (!wants(target.events, event.type)) continue;
      rows.push({
        id: newId(),
        subscription_id: target.id,
        event_type: event.type,
        payload,
        status: "pending",
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
      });
    }
  }
  if (rows.length > 0) await trx.insertInto("webhook_deliveries").values(rows).execute();
}

/** Changes per event at most, so that a bulk write's deliveries stay modest bodies (as the feed's batches do). */
const CHANGES_PER_EVENT = 1000;

/**
 * The events of one revision of an environment's feed: one per category and object type with its changes (more
 * when a bulk write changed more than CHANGES_PER_EVENT of one type).
 */
export function feedEvents(revision: number, at: string, records: readonly FeedRecord[]): GatehouseEvent[] {
  const byType = new Map<string, PublicChange[]>();
  for (const change of publicChanges(revision, at, records)) {
    const type = `${change.category}.${change.object_type}`;
    const list = byType.get(type);
    if (list) list.push(change);
    else byType.set(type, [change]);
  }
  const events: GatehouseEvent[] = [];
  for (const [type, changes] of byType) {
    for (let start = 0; start < changes.length; start += CHANGES_PER_EVENT) {
      events.push({ type, data: { revision, changes: changes.slice(start, start + CHANGES_PER_EVENT) } });
    }
  }
  return events;
}

/** An organization's own scope: its subscriptions see the event, no environment's does. */
export const organizationScope = (organizationId: string): EventScope => ({
  organization_id: organizationId,
  project_id: null,
  environment_id: null,
});

/** One event, in the caller's transaction (enqueueEvents). */
export const enqueueEvent = (trx: Db, scope: EventScope, type: string, data: Record<string, unknown>) =>
  enqueueEvents(trx, scope, [{ type, data }]);
