import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Config } from "../../config.ts";
import { principalOf } from "../../plugins/auth.ts";
import { pageRequest } from "../../lib/pagination.ts";
import { errorResponses } from "../../lib/schemas.ts";
import {
  DeliveryPage,
  DeliveryParams,
  DeliveryRead,
  WebhookCreate,
  WebhookListQuery,
  WebhookPage,
  WebhookParams,
  WebhookRead,
  WebhookUpdate,
} from "./webhooks.schemas.ts";
import { createWebhooksService } from "./webhooks.service.ts";
import { createWebhookDispatcher, type DispatcherOptions } from "./webhooks.dispatcher.ts";

/** Webhooks are managed by organization admins, as API keys are. */
const ORG_ADMIN = { need: { level: "org", access: "admin" } } as const;

type Deps = Pick<DispatcherOptions, "db" | "dialect" | "box" | "notifier" | "outage"> & {
  config: Pick<
    Config,
    "webhookAllowPrivateUrls" | "webhookTimeoutMs" | "webhookRetryBaseMs" | "webhookRetrySeconds"
  >;
};

export const webhooksRoutes: FastifyPluginAsyncTypebox<Deps> = async (app, deps) => {
  const { config } = deps;
  const dispatcher = createWebhookDispatcher({
    db: deps.db,
    dialect: deps.dialect,
    box: deps.box,
    notifier: deps.notifier,
    log: app.log,
    outage: deps.outage,
    timeoutMs: config.webhookTimeoutMs,
    retryBaseMs: config.webhookRetryBaseMs,
    retrySeconds: config.webhookRetrySeconds,
    allowPrivate: config.webhookAllowPrivateUrls === "true",
  });
  app.addHook("onReady", async () => dispatcher.start());
  app.addHook("onClose", () => dispatcher.stop());
  const webhooks = createWebhooksService({ ...deps, wake: dispatcher.wake, catchUp: dispatcher.catchUp });
  const tags = ["webhooks"];
  const one = { 200: WebhookRead, ...errorResponses(404) };
  app.get(
    "/v2/webhooks",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "List the organization's webhooks (never their secrets)",
        querystring: WebhookListQuery,
        response: { 200: WebhookPage, ...errorResponses() },
      },
    },
    (req) => webhooks.list(principalOf(req), pageRequest(req.query)),
  );
  app.post(
    "/v2/webhooks",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Subscribe a URL to events; the signing secret is in this answer only",
        body: WebhookCreate,
        response: { 201: WebhookRead, ...errorResponses(404) },
      },
    },
    async (req, reply) => reply.code(201).send(await webhooks.create(principalOf(req), req.body)),
  );
  app.get(
    "/v2/webhooks/:webhook_id",
    { config: ORG_ADMIN, schema: { tags, summary: "Get a webhook", params: WebhookParams, response: one } },
    (req) => webhooks.get(principalOf(req), req.params.webhook_id),
  );
  app.patch(
    "/v2/webhooks/:webhook_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Change a webhook's URL, events or description, or enable or disable it",
        params: WebhookParams,
        body: WebhookUpdate,
        response: one,
      },
    },
    (req) => webhooks.update(principalOf(req), req.params.webhook_id, req.body),
  );
  app.delete(
    "/v2/webhooks/:webhook_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Delete a webhook and its delivery log",
        params: WebhookParams,
        response: { 204: Type.Null(), ...errorResponses(404) },
      },
    },
    async (req, reply) => {
      await webhooks.remove(principalOf(req), req.params.webhook_id);
      return reply.code(204).send(null);
    },
  );
  app.get(
    "/v2/webhooks/:webhook_id/deliveries",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "The webhook's delivery log, newest first: status, attempts, the last answer",
        params: WebhookParams,
        querystring: WebhookListQuery,
        response: { 200: DeliveryPage, ...errorResponses(404) },
      },
    },
    (req) => webhooks.deliveries(principalOf(req), req.params.webhook_id, pageRequest(req.query)),
  );
  app.get(
    "/v2/webhooks/:webhook_id/deliveries/:delivery_id",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "One delivery, with the event it sends",
        params: DeliveryParams,
        response: { 200: DeliveryRead, ...errorResponses(404) },
      },
    },
    (req) => webhooks.delivery(principalOf(req), req.params.webhook_id, req.params.delivery_id),
  );
  app.post(
    "/v2/webhooks/:webhook_id/deliveries/:delivery_id/redeliver",
    {
      config: ORG_ADMIN,
      schema: {
        tags,
        summary: "Send a delivery again (same webhook-id), whatever became of it",
        params: DeliveryParams,
        response: { 200: DeliveryRead, ...errorResponses(404) },
      },
    },
    (req) => webhooks.redeliver(principalOf(req), req.params.webhook_id, req.params.delivery_id),
  );
};
