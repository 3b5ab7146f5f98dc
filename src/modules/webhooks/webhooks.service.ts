import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Principal } from "../../lib/access.ts";
import { invalid, notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { envelope, offsetOf, type PageRequest } from "../../lib/pagination.ts";
import type { SecretBox } from "../../lib/secrets.ts";
import { now } from "../../lib/time.ts";
import { findEnvironment } from "../../domain/environment-records.ts";
import { findProject } from "../../domain/project-records.ts";
import {
  deleteCursors,
  deleteSubscription,
  findDelivery,
  findSubscription,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  requeueDelivery,
  updateSubscription,
  type DeliveryRow,
  type SubscriptionRow,
} from "./webhooks.repo.ts";
import type { DeliveryRead, WebhookCreate, WebhookRead, WebhookUpdate } from "./webhooks.schemas.ts";
import { newWebhookSecret, urlProblem } from "./webhooks.sender.ts";
import { payloadOf } from "./webhooks.outbox.ts";

/** A subscription as the API shows it: never its secret, except in the creation's answer. */
function webhookRead(row: SubscriptionRow, secret?: string): WebhookRead {
  return {
    id: row.id,
    organization_id: row.organization_id,
    ...(row.project_id !== null && { project_id: row.project_id }),
    ...(row.environment_id !== null && { environment_id: row.environment_id }),
    url: row.url,
    events: JSON.parse(row.events) as string[],
    ...(row.description !== null && { description: row.description }),
    enabled: row.enabled === 1,
    ...(row.disabled_reason !== null && { disabled_reason: row.disabled_reason }),
    ...(secret !== undefined && { secret }),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function deliveryRead(row: DeliveryRow, payload?: string): DeliveryRead {
  return {
    id: row.id,
    webhook_id: row.subscription_id,
    event_type: row.event_type,
    status: row.status as DeliveryRead["status"],
    attempts: row.attempts,
    ...(row.status === "pending" && { next_attempt_at: row.next_attempt_at }),
    ...(row.last_attempt_at !== null && { last_attempt_at: row.last_attempt_at }),
    ...(row.last_status_code !== null && { last_status_code: row.last_status_code }),
    ...(row.last_latency_ms !== null && { last_latency_ms: row.last_latency_ms }),
    ...(row.last_response !== null && { last_response: row.last_response }),
    ...(row.last_error !== null && { last_error: row.last_error }),
    created_at: row.created_at,
    ...(row.delivered_at !== null && { delivered_at: row.delivered_at }),
    ...(payload !== undefined && { payload: JSON.parse(payload) as unknown }),
  };
}

export function createWebhooksService(deps: {
  db: Kysely<Database>;
  box: SecretBox;
  config: { webhookAllowPrivateUrls: string };
  /** Told when a delivery is queued outside the change feed (a redelivery), so a sender takes it at once. */
  wake?: () => void;
  /** Writes the deliveries of the writes answered so far (the dispatcher's catchUp), before a subscription changes. */
  catchUp?: () => Promise<void>;
}) {
  const { db, box } = deps;
  const allowPrivate = deps.config.webhookAllowPrivateUrls === "true";

  async function checkUrl(url: string): Promise<void> {
    const problem = await urlProblem(url, allowPrivate);
    if (problem) throw invalid(problem, ["body", "url"]);
  }

  async function mustFind(principal: Principal, id: string): Promise<SubscriptionRow> {
    const row = await findSubscription(db, principal.organizationId, id.toLowerCase());
    if (!row) throw notFound("webhook", id);
    return row;
  }

  /** The environment a body names (ids or keys), or null for the whole organization. */
  async function scopeOf(organizationId: string, body: WebhookCreate) {
    if (body.project_id === undefined && body.environment_id === undefined) return null;
    if (body.project_id === undefined || body.environment_id === undefined) {
      throw invalid("an environment's webhook needs both project_id and environment_id", ["body"]);
    }
    const project = await findProject(db, organizationId, body.project_id);
    if (!project) throw notFound("project", body.project_id);
    const environment = await findEnvironment(db, project.id, body.environment_id);
    if (!environment) throw notFound("environment", body.environment_id);
    return { projectId: project.id, environmentId: environment.id };
  }

  return {
    async create(principal: Principal, body: WebhookCreate): Promise<WebhookRead> {
      const scope = await scopeOf(principal.organizationId, body);
      await checkUrl(body.url);
      const secret = newWebhookSecret();
      const at = now();
      const row: SubscriptionRow = {
        id: newId(),
        organization_id: principal.organizationId,
        project_id: scope?.projectId ?? null,
        environment_id: scope?.environmentId ?? null,
        url: body.url,
        description: body.description ?? null,
        events: JSON.stringify(body.events),
        secret_sealed: box.seal(secret),
        enabled: 1,
        disabled_reason: null,
        created_at: at,
        updated_at: at,
        active_since: at,
      };
      await insertSubscription(db, row);
      return webhookRead(row, secret);
    },

    async list(principal: Principal, page: PageRequest) {
      const { rows, total } = await listSubscriptions(
        db,
        principal.organizationId,
        offsetOf(page),
        page.perPage,
      );
      return envelope(
        rows.map((r) => webhookRead(r)),
        total,
        page,
      );
    },

    get: async (principal: Principal, id: string) => webhookRead(await mustFind(principal, id)),

    async update(principal: Principal, id: string, body: WebhookUpdate): Promise<WebhookRead> {
      const row = await mustFind(principal, id);
      if (body.url !== undefined) await checkUrl(body.url);
      // The writes answered before this change are announced as the subscription was.
      if (body.events !== undefined || body.enabled === false) await deps.catchUp?.();
      const at = now();
      // Enabled again, it sees the writes from now on (not those made while it was off): its cursors start anew.
      const resumed = body.enabled === true && row.enabled === 0;
      const updated = await db.transaction().execute(async (trx) => {
        if (resumed) await deleteCursors(trx, row.id);
        return updateSubscription(trx, principal.organizationId, row.id, {
          ...(body.url !== undefined && { url: body.url }),
          ...(body.events !== undefined && { events: JSON.stringify(body.events) }),
          ...(body.description !== undefined && { description: body.description }),
          ...(body.enabled !== undefined && { enabled: body.enabled ? 1 : 0, disabled_reason: null }),
          ...(resumed && { active_since: at }),
          updated_at: at,
        });
      });
      if (!updated) throw notFound("webhook", id);
      if (body.enabled) deps.wake?.();
      return webhookRead(updated);
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const row = await mustFind(principal, id);
      if (!(await deleteSubscription(db, principal.organizationId, row.id))) throw notFound("webhook", id);
    },

    async deliveries(principal: Principal, id: string, page: PageRequest) {
      const row = await mustFind(principal, id);
      const { rows, total } = await listDeliveries(db, row.id, offsetOf(page), page.perPage);
      return envelope(
        rows.map((r) => deliveryRead(r)),
        total,
        page,
      );
    },

    async delivery(principal: Principal, id: string, deliveryId: string): Promise<DeliveryRead> {
      const row = await mustFind(principal, id);
      const delivery = await findDelivery(db, row.id, deliveryId.toLowerCase());
      if (!delivery) throw notFound("delivery", deliveryId);
      return deliveryRead(delivery, await payloadOf(delivery));
    },

    async redeliver(principal: Principal, id: string, deliveryId: string): Promise<DeliveryRead> {
      const row = await mustFind(principal, id);
      const delivery = await requeueDelivery(db, row.id, deliveryId.toLowerCase(), now());
      if (!delivery) throw notFound("delivery", deliveryId);
      deps.wake?.();
      return deliveryRead(delivery);
    },
  };
}
