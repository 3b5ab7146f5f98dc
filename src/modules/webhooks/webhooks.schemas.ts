import { Type, type Static } from "typebox";
import { Description, PageQuery, Paginated, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: "where deliveries are POSTed (http or https)",
});
const Events = Type.Array(
  Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: "^(\\*|[a-z_]+\\.(\\*|[a-z_]+))$",
    description: "an event type (`facts.user`), every type of a group (`facts.*`) or every event (`*`)",
  }),
  { minItems: 1, maxItems: 50, uniqueItems: true, description: "the event types sent (docs/events.md)" },
);

export const WebhookCreate = Type.Object(
  {
    url: Url,
    events: Events,
    description: Type.Optional(Description),
    project_id: Type.Optional(Ref("with environment_id: the environment whose events are sent")),
    environment_id: Type.Optional(
      Ref("the environment whose events are sent; absent: the whole organization"),
    ),
  },
  { additionalProperties: false },
);
export type WebhookCreate = Static<typeof WebhookCreate>;

export const WebhookUpdate = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({ description: "true sends again (pending deliveries resume); false holds deliveries" }),
    ),
  },
  { additionalProperties: false },
);
export type WebhookUpdate = Static<typeof WebhookUpdate>;

export const WebhookRead = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  project_id: Type.Optional(Uuid),
  environment_id: Type.Optional(Uuid),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Optional(Type.String()),
  enabled: Type.Boolean(),
  disabled_reason: Type.Optional(
    Type.String({ description: "why Gatehouse disabled the subscription (its deliveries kept failing)" }),
  ),
  secret: Type.Optional(
    Type.String({
      description: "the signing secret (`whsec_...`): in the creation's answer only, never again",
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookRead = Static<typeof WebhookRead>;

export const WebhookPage = Paginated(WebhookRead);
export const WebhookListQuery = Type.Object(PageQuery);
export const WebhookParams = Type.Object({ webhook_id: Ref("webhook id") });
export const DeliveryParams = Type.Object({ webhook_id: Ref("webhook id"), delivery_id: Ref("delivery id") });

export const DeliveryRead = Type.Object({
  id: Uuid,
  webhook_id: Uuid,
  event_type: Type.String(),
  status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
  attempts: Type.Integer(),
  next_attempt_at: Type.Optional({ ...Timestamp, description: "when a pending delivery is sent next" }),
  last_attempt_at: Type.Optional(Timestamp),
  last_status_code: Type.Optional(
    Type.Integer({ description: "the receiver's HTTP status at the last attempt" }),
  ),
  last_latency_ms: Type.Optional(Type.Integer()),
  last_response: Type.Optional(
    Type.String({ description: "the start of the receiver's answer (1 KiB at most)" }),
  ),
  last_error: Type.Optional(
    Type.String({ description: "why the last attempt had no answer (timeout, refused)" }),
  ),
  created_at: Timestamp,
  delivered_at: Type.Optional(Timestamp),
  payload: Type.Optional(Type.Unknown({ description: "the event as sent (when one delivery is read)" })),
});
export type DeliveryRead = Static<typeof DeliveryRead>;
export const DeliveryPage = Paginated(DeliveryRead);
