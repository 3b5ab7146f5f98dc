import { Type, type Static } from "typebox";

/** A policy file's text: the server parses it, so that errors name the file's lines. */
const PolicyText = Type.String({
  maxLength: 10_000_000,
  description: "the policy file (YAML, docs/policy-as-code.md)",
});

export const PolicyExport = Type.Object({
  revision: Type.Integer({ description: "the environment's revision the policy was read at" }),
  policy: PolicyText,
});

export const PolicyPlanBody = Type.Object({ policy: PolicyText });
export type PolicyPlanBody = Static<typeof PolicyPlanBody>;

export const PolicyApplyBody = Type.Object({
  policy: PolicyText,
  revision: Type.Integer({
    minimum: 0,
    description: "the revision of the plan that was reviewed; 409 when the environment is no longer there",
  }),
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
  changes: Type.Array(PolicyChange),
  summary: Summary,
});
