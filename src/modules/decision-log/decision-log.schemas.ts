import { Type, type Static, type TSchema } from "typebox";
import { EnvParams, Nullable, PageQuery, Timestamp, Uuid } from "../../lib/schemas.ts";

const Any = Type.Unknown();

export const AuditLogModel = Type.Object({
  id: Uuid,
  timestamp: Timestamp,
  created_at: Timestamp,
  query: Type.String({
    description: "check, bulk_check, get_user_permissions, get_authorized_users, all_tenants or user_tenants",
  }),
  user_key: Type.Optional(Type.String()),
  resource_type: Type.Optional(Type.String()),
  resource_key: Type.Optional(Type.String()),
  tenant: Type.Optional(Type.String()),
  action: Type.Optional(Type.String()),
  decision: Type.Optional(Type.Boolean()),
  reason: Type.Optional(
    Type.String({ description: "why: the grant path of an allow, the closest miss of a deny" }),
  ),
  org_id: Uuid,
  project_id: Uuid,
  env_id: Uuid,
  pdp_config_id: Type.String({ description: "the PDP instance that decided" }),
  revision: Type.Integer({ description: "the environment revision the PDP decided at" }),
  latency_us: Type.Integer(),
  input: Type.Optional(Any),
  result: Type.Optional(Any),
});

export const AuditLogPage = Type.Object({
  data: Type.Array(AuditLogModel),
  total_count: Type.Integer(),
  page_count: Type.Integer(),
  pagination_count: Type.Integer(),
});

export const AuditLogQuery = Type.Object({
  pdp_id: Type.Optional(Type.String({ maxLength: 255 })),
  users: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })),
  decision: Type.Optional(Type.Boolean()),
  resources: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })),
  tenant: Type.Optional(Type.String({ maxLength: 255 })),
  action: Type.Optional(Type.String({ maxLength: 255 })),
  timestamp_from: Type.Optional(Type.Integer({ minimum: 0, description: "unix seconds" })),
  timestamp_to: Type.Optional(Type.Integer({ minimum: 0, description: "unix seconds" })),
  sort_by: Type.Optional(Type.Union([Type.Literal("timestamp"), Type.Literal("None")])),
  query: Type.Optional(
    Type.Union([
      Type.Literal("check"),
      Type.Literal("bulk_check"),
      Type.Literal("get_user_permissions"),
      Type.Literal("get_authorized_users"),
      Type.Literal("all_tenants"),
      Type.Literal("user_tenants"),
      Type.Literal("none"),
    ]),
  ),
  ...PageQuery,
});

export const AuditLogParams = Type.Object({ ...EnvParams.properties, log_id: Uuid });

const Text = Type.String({ maxLength: 1024 });
const Maybe = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

/** One decision as a standalone PDP ships it: its id and record; a field left out is null. */
const LogEntry = Type.Object({
  id: Uuid,
  /** Older PDPs name the time and the PDP in every entry: the time is the id's, the PDP the batch's. */
  timestamp: Type.Optional(Timestamp),
  pdp_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  query: Type.String({ minLength: 1, maxLength: 64 }),
  user_key: Maybe(Text),
  action: Maybe(Text),
  resource_type: Maybe(Text),
  resource_key: Maybe(Text),
  tenant: Maybe(Text),
  decision: Maybe(Type.Boolean()),
  reason: Type.Optional(Any),
  input: Type.Optional(Any),
  result: Type.Optional(Any),
  revision: Type.Integer({ minimum: 0 }),
  latency_us: Type.Integer({ minimum: 0 }),
});

/** A decision as a standalone PDP ships it. */
export type ShippedDecision = Static<typeof LogEntry>;

export const DecisionLogIngestQuery = Type.Object({
  pdp_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "the PDP that made the decisions" }),
  ),
});

export const DecisionLogIngest = Type.Array(LogEntry, { maxItems: 5000 });

/** The most minutes one stats call covers (a week). */
export const DECISION_STATS_MAX_MINUTES = 7 * 24 * 60;

export const DecisionStatsQuery = Type.Object({
  users: AuditLogQuery.properties.users,
  decision: AuditLogQuery.properties.decision,
  resources: AuditLogQuery.properties.resources,
  tenant: AuditLogQuery.properties.tenant,
  action: AuditLogQuery.properties.action,
  timestamp_from: Type.Optional(
    Type.Integer({ minimum: 0, description: "unix seconds; default an hour before timestamp_to" }),
  ),
  timestamp_to: Type.Optional(Type.Integer({ minimum: 0, description: "unix seconds; default now" })),
});

export const DecisionStats = Type.Object({
  from: Timestamp,
  until: Timestamp,
  data: Type.Array(
    Type.Object({
      minute: Timestamp,
      decision: Type.Union([Type.Literal("allow"), Type.Literal("deny")]),
      count: Type.Integer({ minimum: 1 }),
    }),
    { description: "minutes with checks, oldest first; a minute with none is left out" },
  ),
});
