// A filter plan as a Prisma `where` object: `prisma.document.findMany({ where: planToPrisma(plan, {fields}) })`.
// A pure function: no Prisma import, the object is plain JSON in the shape of Prisma's filter API. Like the SQL
// adapter it keeps the plan's two-valued logic: every comparison is `{AND: [{f: {not: null}}, ...]}`, so a NULL
// column (a missing attribute) makes a comparison false and `NOT` of it true, as in checks. List fields use
// Prisma's scalar-list filters (`has`, `hasEvery`, `hasSome`: PostgreSQL only).

import type { PlanExpression, ResourcePlan } from "../pdp/engine/types.ts";
import { FilterPlanError } from "./sql.ts";

/** Field -> Prisma model field: a name, or `{field, list: true}` for a scalar list (`String[]`). */
export type PrismaFields = Record<string, string | { field: string; list?: boolean }>;

export type PrismaWhere = Record<string, unknown>;

type Comparison = Extract<PlanExpression, { field: string }>;

/** Matches nothing: Prisma answers an empty `OR` with no rows. */
const NOTHING: PrismaWhere = { OR: [] };

function fieldOf(fields: PrismaFields, name: string): { field: string; list: boolean } {
  const mapped = Object.hasOwn(fields, name) ? fields[name] : undefined;
  if (mapped === undefined)
    throw new FilterPlanError(`the plan compares field "${name}", which has no Prisma field`);
  return typeof mapped === "string"
    ? { field: mapped, list: false }
    : { field: mapped.field, list: mapped.list === true };
}

function scalar(c: Comparison, value: unknown): void {
  if (typeof value === "object" && value !== null) {
    throw new FilterPlanError(`the plan compares field "${c.field}" with a list or object value`);
  }
}

const SCALAR_FILTERS: Partial<Record<string, string>> = {
  eq: "equals",
  ne: "not",
  lt: "lt",
  le: "lte",
  gt: "gt",
  ge: "gte",
  starts_with: "startsWith",
  ends_with: "endsWith",
};

/** The filter on a scalar field, or false when the comparison can never hold. */
function scalarFilter(c: Comparison): { filter: PrismaWhere; negate?: boolean } | false {
  const v = c.value;
  const simple = SCALAR_FILTERS[c.operator];
  if (simple !== undefined) {
    if (v === null) return c.operator === "ne" ? { filter: {} } : false;
    if ((c.operator === "starts_with" || c.operator === "ends_with") && typeof v !== "string") return false;
    scalar(c, v);
    return { filter: { [simple]: v } };
  }
  switch (c.operator) {
    case "in":
    case "not_in":
      if (!Array.isArray(v)) return c.operator === "in" ? false : { filter: {} };
      for (const item of v) scalar(c, item);
      return { filter: { [c.operator === "in" ? "in" : "notIn"]: v } };
    case "contains":
    case "not_contains":
      if (typeof v !== "string") return c.operator === "contains" ? false : { filter: {} };
      return { filter: { contains: v }, negate: c.operator === "not_contains" };
    default:
      return false;
  }
}

function listFilter(c: Comparison): { filter: PrismaWhere; negate?: boolean } | false {
  const v = c.value;
  switch (c.operator) {
    case "contains":
    case "array_contains":
    case "not_contains":
      scalar(c, v);
      return { filter: { has: v }, negate: c.operator === "not_contains" };
    case "eq":
    case "ne":
      if (!Array.isArray(v)) return c.operator === "eq" ? false : { filter: {} };
      return { filter: { equals: v }, negate: c.operator === "ne" };
    case "array_superset":
      return Array.isArray(v) ? { filter: { hasEvery: v } } : false;
    case "array_intersect":
      return Array.isArray(v) ? { filter: { hasSome: v } } : false;
    default:
      throw new FilterPlanError(`"${c.operator}" on the list field "${c.field}" has no Prisma filter`);
  }
}

function comparison(c: Comparison, fields: PrismaFields): PrismaWhere {
  const { field, list } = fieldOf(fields, c.field);
  const translated = list ? listFilter(c) : scalarFilter(c);
  if (translated === false) return NOTHING;
  const present = { [field]: { not: null } };
  if (Object.keys(translated.filter).length === 0) return present;
  const test = { [field]: translated.filter };
  return { AND: [present, translated.negate ? { NOT: test } : test] };
}

function expression(e: PlanExpression, fields: PrismaFields): PrismaWhere {
  switch (e.operator) {
    case "and":
      return { AND: e.operands.map((operand) => expression(operand, fields)) };
    case "or":
      return { OR: e.operands.map((operand) => expression(operand, fields)) };
    case "not":
      return { NOT: expression(e.operands[0], fields) };
    default:
      return comparison(e, fields);
  }
}

/** The plan as a Prisma `where` object; always_allowed is `{}`, always_denied `{OR: []}`. */
export function planToPrisma(plan: ResourcePlan, options: { fields: PrismaFields }): PrismaWhere {
  if (plan.kind === "always_allowed") return {};
  if (plan.kind === "always_denied" || plan.condition === undefined) return NOTHING;
  return expression(plan.condition, options.fields);
}
