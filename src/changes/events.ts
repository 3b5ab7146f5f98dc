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

/** The subscriptions' lookup and the deliveries' insert, built once per shape (QueryShapes). */
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
  /** the body compressed, `payload` empty then (src/modules/webhooks/webhooks.outbox.ts) */
  payload_gzip?: Uint8Array | null;
}

/** Each event with each target that wants it (`wants`), event by event. */
function addressed<E extends { type: string }, T extends EventTarget>(
  events: readonly E[],
  targets: readonly T[],
): { event: E; target: T }[] {
  const out = [];
  for (const event of events) {
    for (const target of targets) if (wants(target.events, event.type)) out.push({ event, target });
  }
  return out;
}

/**
 * Writes drafts as pending deliveries, due at once; with `lease`, already leased to a sender, which sends them
 * without claiming them (src/modules/webhooks/webhooks.outbox.ts). Answers the rows written.
 */
export async function insertDeliveries(
  trx: Db,
  drafts: readonly DeliveryDraft[],
  at: string,
  lease?: { owner: string; expiresAt: string },
) {
  const rows = drafts.map((d) => ({
    id: newId(),
    ...d,
    payload_gzip: d.payload_gzip ?? null,
    status: "pending",
    attempts: 0,
    next_attempt_at: at,
    created_at: at,
    lease_owner: lease?.owner ?? null,
    lease_expires_at: lease?.expiresAt ?? null,
  }));
  if (rows.length > 0) {
    await shapes.insert(trx, "deliveries", rows, (some) => trx.insertInto("webhook_deliveries").values(some));
  }
  return rows;
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

/** An organization's own scope: its subscriptions see the event, no environment's does. */
export const organizationScope = (organizationId: string): EventScope => ({
  organization_id: organizationId,
  project_id: null,
  environment_id: null,
});

/** One event, in the caller's transaction (enqueueEvents). */
export const enqueueEvent = (trx: Db, scope: EventScope, type: string, data: Record<string, unknown>) =>
  enqueueEvents(trx, scope, [{ type, data }]);
