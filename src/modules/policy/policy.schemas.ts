import { Type, type Static } from "typebox";
import { CheckRequest } from "../decisions/decisions.schemas.ts";

/** A policy file's text: the server parses it, so that errors name the file's lines. */
const PolicyText = Type.String({
  maxLength: 10_000_000,
  description: "the policy file (YAML, docs/policy-as-code.md)",
});

export const PolicyExport = Type.Object({
  revision: Type.Integer({ description: "the environment's revision the policy was read at" }),
  policy: PolicyText,
});

export const PolicyExportQuery = Type.Object({
  with_facts: Type.Optional(
    Type.Boolean({ description: "also write the facts section: tenants, users and role assignments" }),
  ),
});
export type PolicyExportQuery = Static<typeof PolicyExportQuery>;

export const PolicyPlanBody = Type.Object({ policy: PolicyText });
export type PolicyPlanBody = Static<typeof PolicyPlanBody>;

export const PolicyApplyBody = Type.Object({
  policy: PolicyText,
  revision: Type.Integer({
    minimum: 0,
    description: "the revision of the plan that was reviewed; 409 when the environment is no longer there",
  }),
  replan: Type.Optional(
    Type.Boolean({
      description:
        "when the environment changed since `revision`, plan again and apply instead of answering 409",
    }),
  ),
});
export type PolicyApplyBody = Static<typeof PolicyApplyBody>;

const PolicyChange = Type.Object({
  op: Type.Union([Type.Literal("create"), Type.Literal("update"), Type.Literal("delete")]),
  object: Type.String({ maxLength: 64 }),
  key: Type.String({ maxLength: 2048 }),
  fields: Type.Optional(Type.Array(Type.String({ maxLength: 64 }))),
});

const Summary = Type.Object({ create: Type.Integer(), update: Type.Integer(), delete: Type.Integer() });

export const PolicyPlan = Type.Object({
  revision: Type.Integer({ description: "the environment's revision the plan was made at; apply takes it" }),
  changes: Type.Array(PolicyChange),
  dangerous: Type.Array(
    Type.Object({
      object: Type.String({ maxLength: 64 }),
      key: Type.String({ maxLength: 2048 }),
      reason: Type.String({ maxLength: 4096 }),
    }),
    { description: "deletions that remove facts (role assignments, instances) or change a condition set" },
  ),
  summary: Summary,
});

export const PolicyApplied = Type.Object({
  revision: Type.Integer({
    description: "the environment's revision after the apply (unchanged when nothing changed)",
  }),
  replanned: Type.Optional(
    Type.Boolean({ description: "true when the environment had changed and the file was planned again" }),
  ),
  changes: Type.Array(PolicyChange),
  summary: Summary,
});

export const PolicyReplayBody = Type.Object(
  {
    draft: Type.Object(
      {
        policy: Type.Optional(PolicyText),
        revision: Type.Optional(
          Type.Integer({
            minimum: 0,
            description: "with `policy`: the plan's revision; 409 when the environment is no longer there",
          }),
        ),
        environment: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 255,
            description: "another environment of the project (id or key) whose policy is the draft",
          }),
        ),
      },
      {
        additionalProperties: false,
        description:
          "what to replay against, with this environment's facts: a policy file (with `revision`, a plan), or " +
          "another environment's policy",
      },
    ),
    timestamp_from: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "the window's start (Unix seconds); default 24 hours before its end",
      }),
    ),
    timestamp_to: Type.Optional(
      Type.Integer({ minimum: 0, description: "the window's end (Unix seconds, inclusive); default now" }),
    ),
    checks: Type.Optional(
      Type.Array(CheckRequest, {
        maxItems: 10_000,
        description: "checks to replay instead of the decision log's window",
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 10_000,
        default: 100,
        description: "flips listed (all are counted)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type PolicyReplayBody = Static<typeof PolicyReplayBody>;

const ReplaySide = Type.Object({
  allow: Type.Boolean(),
  reason: Type.String({ description: "the engine's explanation" }),
});

const Count = Type.Integer({ minimum: 0 });

export const PolicyReplay = Type.Object({
  revision: Type.Integer({ description: "the environment's revision replayed against" }),
  draft: Type.Union([Type.Literal("policy"), Type.Literal("environment")]),
  source: Type.Union([Type.Literal("decision_log"), Type.Literal("checks")]),
  from: Type.Optional(Type.String({ format: "date-time" })),
  until: Type.Optional(Type.String({ format: "date-time" })),
  replayed: Count,
  skipped: Type.Integer({ description: "logged queries that are not single checks (nothing to replay)" }),
  flipped: Count,
  to_allow: Count,
  to_deny: Count,
  share: Type.Number({ description: "flipped / replayed (0 when nothing was replayed)" }),
  changed_since_logged: Type.Integer({
    description: "logged decisions the environment no longer makes (its policy or facts changed since)",
  }),
  by_resource_action: Type.Array(
    Type.Object({
      resource_type: Type.String(),
      action: Type.String(),
      replayed: Count,
      flipped: Count,
      to_allow: Count,
      to_deny: Count,
    }),
  ),
  flips: Type.Array(
    Type.Object({
      id: Type.Optional(Type.String()),
      timestamp: Type.Optional(Type.String({ format: "date-time" })),
      logged: Type.Optional(
        Type.Boolean({ description: "the logged decision, when it differs from `before`" }),
      ),
      user: Type.String(),
      action: Type.String(),
      resource: Type.Object({
        type: Type.String(),
        key: Type.Optional(Type.String()),
        tenant: Type.Optional(Type.String({ description: "as the check named it" })),
      }),
      before: ReplaySide,
      after: ReplaySide,
    }),
  ),
  flips_truncated: Type.Boolean({ description: "more decisions flipped than `flips` lists (see `limit`)" }),
  message: Type.String(),
});
