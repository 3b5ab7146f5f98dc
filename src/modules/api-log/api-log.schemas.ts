import { Type, type Static, type TSchema } from "typebox";
import { PageQuery, Ref, Timestamp, Uuid } from "../../lib/schemas.ts";

/** Permit's `APIHistoryEventRead`: fields with no value are left out. */
const eventFields = {
  timestamp: Timestamp,
  timestamp_utc: Type.Optional(Timestamp),
  method: Type.String(),
  path: Type.String(),
  success: Type.Boolean(),
  status: Type.Integer(),
  request_id: Type.Optional(Uuid),
  client_ip: Type.String(),
  actor_type: Type.String({ description: "api_key: every recorded call that an organization can read" }),
  actor_id: Uuid,
  actor_display_name: Type.Optional(Type.String()),
  org_id: Type.Optional(Uuid),
  project_key: Type.Optional(Type.String()),
  project_id: Type.Optional(Uuid),
  env_key: Type.Optional(Type.String()),
  env_id: Type.Optional(Uuid),
  id: Uuid,
};

export const APIHistoryEventRead = Type.Object(eventFields);
export type APIHistoryEventRead = Static<typeof APIHistoryEventRead>;

export const APIHistoryEventFullRead = Type.Object({
  request_body: Type.Optional(
    Type.String({ description: "the request's JSON body, secrets redacted, truncated past the bound" }),
  ),
  response_body: Type.Optional(
    Type.String({ description: "the response body, secrets redacted, truncated" }),
  ),
  ...eventFields,
});
export type APIHistoryEventFullRead = Static<typeof APIHistoryEventFullRead>;

export const APIHistoryPage = Type.Object({
  data: Type.Array(
    Type.Object({
      ...eventFields,
      request_body: Type.Optional(
        Type.String({
          description: "with `with_request_body=true` (Gatehouse's own): as in the event's details",
        }),
      ),
    }),
  ),
  total_count: Type.Integer({ minimum: 0 }),
  page_count: Type.Integer({ minimum: 0 }),
  pagination_count: Type.Integer({
    minimum: 0,
    description: "records reachable by paging; Gatehouse does not cap paging, so it equals total_count",
  }),
});
export type APIHistoryPage = Static<typeof APIHistoryPage>;

const Many = <T extends TSchema>(item: T, description: string) =>
  Type.Optional(Type.Array(item, { maxItems: 100, description }));
/** Unix seconds, up to the year 9999. */
const UnixSeconds = (description: string) =>
  Type.Optional(Type.Integer({ minimum: 0, maximum: 253_402_300_799, description }));

const historyFilters = {
  method: Many(Type.String({ minLength: 1, maxLength: 16 }), "HTTP methods (any of)"),
  path: Many(
    Type.String({ minLength: 1, maxLength: 2048 }),
    "exact request paths, without the query (any of)",
  ),
  success: Type.Optional(Type.Boolean({ description: "2xx and 3xx are successes" })),
  status_code: Many(Type.Integer({ minimum: 100, maximum: 599 }), "HTTP status codes (any of)"),
  client_ip: Many(Type.String({ minLength: 1, maxLength: 64 }), "client addresses (any of)"),
  actor_type: Many(Type.String({ minLength: 1, maxLength: 32 }), "actor types (any of); api_key"),
  actor_id: Many(Type.String({ minLength: 1, maxLength: 64 }), "API key ids (any of)"),
  actor_display_name: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "API key name" }),
  ),
  text: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        "calls whose path or request body contains this text, case-sensitive (Gatehouse's own): a user's key finds its creation, its edits and its role assignments",
    }),
  ),
  project_id: Many(Ref("project id or key"), "projects (any of)"),
  env_id: Many(Ref("environment id or key"), "environments (any of)"),
  timestamp_from: UnixSeconds("calls at or after this second"),
  timestamp_until: UnixSeconds("calls at or before this second (inclusive)"),
};

export const HistoryQuery = Type.Object({
  ...historyFilters,
  with_request_body: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        "each call's request body too (Gatehouse's own): the dashboard's activity reads writes as sentences",
    }),
  ),
  ...PageQuery,
});
export type HistoryQuery = Static<typeof HistoryQuery>;

/** The most minutes one stats call covers (a week). */
export const STATS_MAX_MINUTES = 7 * 24 * 60;

export const HistoryStatsQuery = Type.Object(historyFilters);
export type HistoryStatsQuery = Static<typeof HistoryStatsQuery>;

export const HistoryStats = Type.Object({
  from: Timestamp,
  until: Timestamp,
  data: Type.Array(
    Type.Object({
      minute: Timestamp,
      status_class: Type.Union(["1xx", "2xx", "3xx", "4xx", "5xx"].map((c) => Type.Literal(c))),
      count: Type.Integer({ minimum: 1 }),
    }),
    { description: "minutes with calls, oldest first; a minute with none is left out" },
  ),
});
export type HistoryStats = Static<typeof HistoryStats>;

export const EventParams = Type.Object({ event_id: Uuid });
