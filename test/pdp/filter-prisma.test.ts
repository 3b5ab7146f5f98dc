// The Prisma adapter's output shape (Prisma is not a dependency, and `prisma generate` cannot fetch its engine on
// this machine, so no real Prisma client runs here): each operator becomes the documented Prisma filter, guarded
// so that a missing (NULL) field makes a comparison false and its negation true; unmapped fields and filters Prisma
// cannot state throw FilterPlanError.

import { test } from "node:test";
import assert from "node:assert/strict";
import { FilterPlanError, planToPrisma, type PrismaFields } from "../../src/filters/index.ts";
import type { PlanExpression, ResourcePlan } from "../../src/pdp/engine/index.ts";

const fields: PrismaFields = {
  key: "id",
  tenant: "tenantId",
  public: "public",
  level: "level",
  title: "title",
  labels: { field: "labels", list: true },
};

const conditional = (condition: PlanExpression): ResourcePlan => ({
  kind: "conditional",
  condition,
  key_count: 0,
});
const where = (condition: PlanExpression) => planToPrisma(conditional(condition), { fields });
const guarded = (field: string, filter: object, negate = false) => ({
  AND: [{ [field]: { not: null } }, negate ? { NOT: { [field]: filter } } : { [field]: filter }],
});

test("always_allowed is {}, always_denied matches nothing", () => {
  assert.deepEqual(planToPrisma({ kind: "always_allowed", key_count: 0 }, { fields }), {});
  assert.deepEqual(planToPrisma({ kind: "always_denied", key_count: 0 }, { fields }), { OR: [] });
});

test("scalar comparisons become Prisma's filters, each guarded against NULL", () => {
  const cases: [PlanExpression, object][] = [
    [{ operator: "eq", field: "public", value: true }, guarded("public", { equals: true })],
    [{ operator: "ne", field: "title", value: "x" }, guarded("title", { not: "x" })],
    [{ operator: "lt", field: "level", value: 3 }, guarded("level", { lt: 3 })],
    [{ operator: "le", field: "level", value: 3 }, guarded("level", { lte: 3 })],
    [{ operator: "gt", field: "level", value: 3 }, guarded("level", { gt: 3 })],
    [{ operator: "ge", field: "level", value: 3 }, guarded("level", { gte: 3 })],
    [{ operator: "in", field: "key", value: ["d1", "d2"] }, guarded("id", { in: ["d1", "d2"] })],
    [{ operator: "not_in", field: "tenant", value: ["t1"] }, guarded("tenantId", { notIn: ["t1"] })],
    [{ operator: "contains", field: "title", value: "lp" }, guarded("title", { contains: "lp" })],
    [{ operator: "not_contains", field: "title", value: "lp" }, guarded("title", { contains: "lp" }, true)],
    [{ operator: "starts_with", field: "title", value: "Al" }, guarded("title", { startsWith: "Al" })],
    [{ operator: "ends_with", field: "title", value: "ha" }, guarded("title", { endsWith: "ha" })],
    // Never true on a scalar field: matches nothing.
    [{ operator: "array_contains", field: "title", value: "a" }, { OR: [] }],
    [{ operator: "eq", field: "title", value: null }, { OR: [] }],
  ];
  for (const [condition, expected] of cases)
    assert.deepEqual(where(condition), expected, JSON.stringify(condition));
});

test("list fields use has, hasEvery and hasSome; array_subset cannot be stated and throws", () => {
  assert.deepEqual(
    where({ operator: "array_contains", field: "labels", value: "red" }),
    guarded("labels", { has: "red" }),
  );
  assert.deepEqual(
    where({ operator: "not_contains", field: "labels", value: "red" }),
    guarded("labels", { has: "red" }, true),
  );
  assert.deepEqual(
    where({ operator: "array_superset", field: "labels", value: ["a", "b"] }),
    guarded("labels", { hasEvery: ["a", "b"] }),
  );
  assert.deepEqual(
    where({ operator: "array_intersect", field: "labels", value: ["a"] }),
    guarded("labels", { hasSome: ["a"] }),
  );
  assert.deepEqual(
    where({ operator: "eq", field: "labels", value: ["a"] }),
    guarded("labels", { equals: ["a"] }),
  );
  assert.throws(() => where({ operator: "array_subset", field: "labels", value: ["a"] }), FilterPlanError);
});

test("and, or, not nest; an unmapped field or an object value throws", () => {
  const condition: PlanExpression = {
    operator: "or",
    operands: [
      { operator: "in", field: "tenant", value: ["t2"] },
      { operator: "not", operands: [{ operator: "eq", field: "public", value: false }] },
    ],
  };
  assert.deepEqual(where(condition), {
    OR: [guarded("tenantId", { in: ["t2"] }), { NOT: guarded("public", { equals: false }) }],
  });
  assert.deepEqual(where({ operator: "and", operands: [] }), { AND: [] });
  assert.throws(() => where({ operator: "eq", field: "owner", value: "ann" }), FilterPlanError);
  assert.throws(() => where({ operator: "eq", field: "title", value: { a: 1 } }), FilterPlanError);
});
