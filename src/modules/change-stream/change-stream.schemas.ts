import { Type } from "typebox";
import { Timestamp } from "../../lib/schemas.ts";

export const ChangeStreamQuery = Type.Object({
  after: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "the changes after this revision (absent: the SSE `Last-Event-ID`, else 0)",
    }),
  ),
  wait: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 60,
      default: 0,
      description: "long poll (JSON): seconds to wait for a change when there is none yet",
    }),
  ),
});

/** One change, in the shape docs/events.md documents (src/changes/events.ts's PublicChange). */
export const PublicChange = Type.Object(
  {
    revision: Type.Integer({ description: "the environment's revision the change belongs to" }),
    seq: Type.Integer({ description: "its place within the revision, from 0" }),
    at: Timestamp,
    category: Type.Union([Type.Literal("facts"), Type.Literal("schema")]),
    object_type: Type.String({
      description:
        "user, tenant, role_assignment, resource_instance, relationship_tuple; resource, role, condition_set, condition_set_rule, proxy_config",
    }),
    action: Type.Union([Type.Literal("upsert"), Type.Literal("delete")]),
    object: Type.Unknown({ description: "the object as it is now (upsert), or what names it (delete)" }),
  },
  { description: "one change of the environment (docs/events.md)" },
);

export const ChangeStreamPage = Type.Object({
  changes: Type.Array(PublicChange),
  revision: Type.Integer({ description: "the last revision this answer covers: the next call's `after`" }),
  head: Type.Integer({
    description: "the environment's revision now; `revision` < `head`: call again at once",
  }),
});
