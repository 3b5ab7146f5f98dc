// Filter plans: "which instances of a type may this user act on?" answered as an expression over a resource's
// fields that an app can put into its own query (docs/data-filtering.md). The user, the action and the context are
// known; the resource is not, so each grant becomes a residual condition:
//
//   tenant roles       -> tenant in (tenants where a role grants the permission)
//   instance roles     -> key in (instances held directly or derived, each in its own tenant)
//   condition sets     -> the user set and the resource set evaluated partially: leaves on the user and the
//                         context become true/false, leaves on the resource become comparisons on its fields
//
// A leaf that the expression language cannot state (it compares two resource fields, or a field with a missing
// reference under a negative operator) is evaluated on every instance the engine holds and becomes `key in (...)`.

import {
  compileConditions,
  ConditionInput,
  descend,
  operatorHolds,
  pathReader,
  type Predicate,
} from "./conditions.ts";
import { NO_STATE } from "./derivation.ts";
import type { EngineView } from "./listings.ts";
import { hasPermission, type AbacRule } from "./schema.ts";
import type {
  PlanComparison,
  PlanExpression,
  PlanResource,
  ResourcePlan,
  ResourcePlanQuery,
} from "./types.ts";

/** What a partial evaluation leaves: a constant or a condition on the resource's fields. */
type Residual = boolean | PlanExpression;

const PLAN_OPERATORS: Record<string, PlanComparison> = {
  equals: "eq",
  "not-equals": "ne",
  "greater-than": "gt",
  "greater-than-equals": "ge",
  "less-than": "lt",
  "less-than-equals": "le",
  in: "in",
  "not-in": "not_in",
  contains: "contains",
  "not-contains": "not_contains",
  array_contains: "array_contains",
  "array-contains": "array_contains",
  array_subset: "array_subset",
  array_superset: "array_superset",
  array_intersect: "array_intersect",
  "starts-with": "starts_with",
  "ends-with": "ends_with",
};

/** The condition operator each plan comparison evaluates with. */
const CONDITION_OPERATOR = Object.fromEntries(
  Object.entries(PLAN_OPERATORS).map(([condition, plan]) => [plan, condition]),
) as Record<PlanComparison, string>;

/** `known value OP field` restated as `field OP' known value`, for the operators where that is exact. */
const FLIPPED: Record<string, (field: string, value: unknown) => Residual> = {
  equals: (field, value) => ({ operator: "eq", field, value }),
  // "not equal" also holds when the field is missing, which a plan comparison never does: negate eq instead.
  "not-equals": (field, value) => ({ operator: "not", operands: [{ operator: "eq", field, value }] }),
  "greater-than": (field, value) => ({ operator: "lt", field, value }),
  "greater-than-equals": (field, value) => ({ operator: "le", field, value }),
  "less-than": (field, value) => ({ operator: "gt", field, value }),
  "less-than-equals": (field, value) => ({ operator: "ge", field, value }),
  in: (field, value) => ({ operator: "array_contains", field, value }),
};

function and(parts: Residual[]): Residual {
  const operands: PlanExpression[] = [];
  for (const part of parts) {
    if (part === false) return false;
    if (part === true) continue;
    if (part.operator === "and") operands.push(...part.operands);
    else operands.push(part);
  }
  if (operands.length === 0) return true;
  return operands.length === 1 ? (operands[0] as PlanExpression) : { operator: "and", operands };
}

function or(parts: Residual[]): Residual {
  const operands: PlanExpression[] = [];
  for (const part of parts) {
    if (part === true) return true;
    if (part === false) continue;
    if (part.operator === "or") operands.push(...part.operands);
    else operands.push(part);
  }
  if (operands.length === 0) return false;
  return operands.length === 1 ? (operands[0] as PlanExpression) : { operator: "or", operands };
}

function not(part: Residual): Residual {
  if (typeof part === "boolean") return !part;
  if (part.operator === "not") return part.operands[0];
  return { operator: "not", operands: [part] };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A path on the resource (other than its type) names a field; anything else is known when the plan is made. */
function fieldOf(path: string): string | undefined {
  if (!path.startsWith("resource.")) return undefined;
  const field = path.slice("resource.".length);
  return field === "type" ? undefined : field;
}

class PartialEvaluator {
  constructor(
    private readonly view: EngineView,
    private readonly type: number,
    /** The user and context filled in; the resource's type only. */
    private readonly input: ConditionInput,
  ) {}

  /** The residual of a whole condition document; a document with problems never matches, as in checks. */
  document(conditions: unknown): Residual {
    if (compileConditions(conditions).problems.length > 0) return false;
    return this.node(conditions ?? {});
  }

  private node(node: unknown): Residual {
    if (!isPlainObject(node)) return false;
    const parts: Residual[] = [];
    for (const [key, value] of Object.entries(node)) {
      if (key === "allOf" || key === "anyOf") {
        const children = (value as unknown[]).map((child) => this.node(child));
        parts.push(key === "allOf" ? and(children) : or(children));
      } else if (key === "not") {
        parts.push(not(this.node(value)));
      } else {
        for (const [name, operand] of Object.entries(value as Record<string, unknown>)) {
          parts.push(this.comparison(key, name, operand));
        }
      }
    }
    return and(parts);
  }

  private comparison(path: string, name: string, operand: unknown): Residual {
    const field = fieldOf(path);
    const refPath =
      isPlainObject(operand) && Object.keys(operand).length === 1 && typeof operand["ref"] === "string"
        ? operand["ref"]
        : undefined;
    const refField = refPath === undefined ? undefined : fieldOf(refPath);
    const known = (p: string) => (pathReader(p) as (input: ConditionInput) => unknown)(this.input);
    if (field === undefined) {
      if (refField === undefined) {
        return operatorHolds(name, known(path), refPath === undefined ? operand : known(refPath as string));
      }
      const actual = known(path);
      if (actual === undefined) return false;
      const flip = FLIPPED[name];
      return flip === undefined ? this.enumerate(path, name, operand) : flip(refField, actual);
    }
    if (refPath === undefined)
      return { operator: PLAN_OPERATORS[name] as PlanComparison, field, value: operand };
    if (refField !== undefined) return this.enumerate(path, name, operand);
    const value = known(refPath);
    if (value === undefined) {
      // Compared with nothing, only the negative operators can hold (on any present value): no plan comparison
      // says "present", so those are enumerated.
      return name === "not-equals" || name === "not-contains" ? this.enumerate(path, name, operand) : false;
    }
    return { operator: PLAN_OPERATORS[name] as PlanComparison, field, value };
  }

  /** The leaf decided on every instance of the type the engine holds: `key in (...)`. */
  private enumerate(path: string, name: string, operand: unknown): Residual {
    const { facts } = this.view;
    const predicate: Predicate = compileConditions({ [path]: { [name]: operand } }).predicate;
    const input = this.input;
    const keys: string[] = [];
    for (const instance of facts.instancesByType[this.type]?.values() ?? []) {
      if (!facts.instanceExists(instance)) continue;
      input.resourceKey = facts.instanceKeys[instance];
      input.resourceTenant = facts.tenants.keyOf(facts.instanceTenant[instance] as number);
      input.resourceStored = facts.instanceAttributes[instance];
      if (predicate(input)) keys.push(input.resourceKey as string);
    }
    input.resourceKey = undefined;
    input.resourceTenant = "";
    input.resourceStored = undefined;
    return keys.length === 0 ? false : { operator: "in", field: "key", value: keys.sort() };
  }

  rule(rule: AbacRule): Residual {
    const user = this.document(rule.userConditions);
    return user === false ? false : and([user, this.document(rule.resourceConditions)]);
  }
}

function keyCount(expression: PlanExpression): number {
  if ("operands" in expression) return expression.operands.reduce((n, e) => n + keyCount(e), 0);
  return expression.field === "key" && Array.isArray(expression.value) && expression.operator === "in"
    ? expression.value.length
    : 0;
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The plan of a resource query. `scopeTenant` is the request's tenant when it names one (not "default"): an
 * instance of another tenant is then a tenant mismatch, so the plan only admits that tenant's.
 */
export function planResources(
  view: EngineView,
  query: ResourcePlanQuery,
  scopeTenant: string | undefined,
): ResourcePlan {
  const { facts, schema, search } = view;
  const type = facts.types.get(query.resource.type);
  const permission = type === undefined ? undefined : schema.actionPermissions[type]?.get(query.action);
  if (type === undefined || permission === undefined) return { kind: "always_denied", key_count: 0 };
  const scope = scopeTenant === undefined ? undefined : facts.tenants.get(scopeTenant);
  const user = facts.users.get(query.user.key);
  const grants: Residual[] = [];

  if (user !== undefined) {
    const tenants = new Set<number>();
    const assigned = facts.userTenantRoles[user] ?? [];
    for (let i = 0; i < assigned.length; i += 2) {
      const tenant = assigned[i] as number;
      if (scopeTenant !== undefined && tenant !== scope) continue;
      if (hasPermission(schema.rolePermissionBits[assigned[i + 1] as number], permission))
        tenants.add(tenant);
    }
    if (tenants.size > 0) {
      const keys = [...tenants].map((t) => facts.tenants.keyOf(t)).sort(compareStrings);
      grants.push(scopeTenant !== undefined ? true : { operator: "in", field: "tenant", value: keys });
    }
    if (search.startState(permission) !== NO_STATE) {
      const only = scopeTenant === undefined ? undefined : (scope ?? -1);
      const keys = instancesGranting(view, user, type, permission, only);
      if (keys.length > 0) grants.push({ operator: "in", field: "key", value: keys });
    }
  }

  const rules = schema.abacRules[permission] ?? [];
  if (rules.length > 0) {
    const input = new ConditionInput();
    input.userKey = query.user.key;
    input.userRequest = query.user;
    input.userStored = user === undefined ? undefined : facts.userProfiles[user];
    input.resourceType = query.resource.type;
    input.context = query.context;
    const evaluator = new PartialEvaluator(view, type, input);
    for (const rule of rules) grants.push(evaluator.rule(rule));
  }

  const condition =
    scopeTenant === undefined
      ? or(grants)
      : and([{ operator: "eq", field: "tenant", value: scopeTenant }, or(grants)]);
  if (condition === true) return { kind: "always_allowed", key_count: 0 };
  if (condition === false) return { kind: "always_denied", key_count: 0 };
  return { kind: "conditional", condition, key_count: keyCount(condition) };
}

/** Scratch marks by instance id for instancesGranting: a generation stamp, the roles seen (bits), emitted. */
const marks = {
  stamp: new Int32Array(1024),
  roles: new Int32Array(1024),
  emitted: new Int32Array(1024),
  gen: 0,
};

function freshMarks(instances: number): typeof marks {
  if (marks.stamp.length < instances) {
    const size = Math.ceil(instances * 1.5);
    marks.stamp = new Int32Array(size);
    marks.roles = new Int32Array(size);
    marks.emitted = new Int32Array(size);
    marks.gen = 0;
  }
  marks.gen++;
  return marks;
}

/** Whether (instance, role) was seen in this walk; marks it seen. Bits while role ids fit, else a set. */
function seenBefore(
  m: typeof marks,
  pairs: Set<number> | undefined,
  instance: number,
  role: number,
  roleCount: number,
) {
  if (pairs !== undefined) {
    const pair = instance * roleCount + role;
    if (pairs.has(pair)) return true;
    pairs.add(pair);
    return false;
  }
  if (m.stamp[instance] !== m.gen) {
    m.stamp[instance] = m.gen;
    m.roles[instance] = 0;
  }
  const bit = 1 << role;
  if (((m.roles[instance] as number) & bit) !== 0) return true;
  m.roles[instance] = (m.roles[instance] as number) | bit;
  return false;
}

/**
 * Keys of the type's instances on which the user holds a role granting the permission, in the instance's tenant: a
 * forward walk over (instance, role) pairs from the user's direct assignments along outgoing tuples, the pairs
 * rolesHeldByUser (derivation.ts) grants, without building per-instance role sets. Keys come in instance id order
 * (the order the PDP stored them): sorting ids is far cheaper than sorting 10,000 strings.
 */
function instancesGranting(
  view: EngineView,
  user: number,
  type: number,
  permission: number,
  onlyTenant: number | undefined,
): string[] {
  const ids = instanceIdsGranting(view, user, type, permission, onlyTenant);
  return Array.from(ids, (instance) => view.facts.instanceKeys[instance] as string);
}

/** The ids of those instances, ascending (listing walks use them as candidates). */
export function instanceIdsGranting(
  { facts, schema }: EngineView,
  user: number,
  type: number,
  permission: number,
  onlyTenant: number | undefined,
): Int32Array {
  const roleCount = facts.roles.size;
  const found: number[] = [];
  const direct = facts.userInstanceRoles[user] ?? [];
  const tenants = new Set<number>();
  for (let i = 0; i < direct.length; i += 3) tenants.add(direct[i + 2] as number);
  const m = freshMarks(facts.instanceCount);
  for (const tenant of tenants) {
    if (onlyTenant !== undefined && tenant !== onlyTenant) continue;
    // Derivations stay in one tenant: one walk per tenant of the user's instance roles.
    if (tenants.size > 1) freshMarks(facts.instanceCount);
    const pairs = roleCount > 31 ? new Set<number>() : undefined;
    const pending: number[] = [];
    for (let i = 0; i < direct.length; i += 3) {
      if (direct[i + 2] === tenant) pending.push(direct[i] as number, direct[i + 1] as number);
    }
    while (pending.length > 0) {
      const role = pending.pop() as number;
      const instance = pending.pop() as number;
      if (seenBefore(m, pairs, instance, role, roleCount)) continue;
      const instanceType = facts.instanceType[instance] as number;
      if (
        instanceType === type &&
        facts.instanceTenant[instance] === tenant &&
        m.emitted[instance] !== m.gen &&
        hasPermission(schema.rolePermissionBits[role], permission)
      ) {
        // An instance is in one tenant, so it is found in one walk at most.
        m.emitted[instance] = m.gen;
        found.push(instance);
      }
      const outgoing = facts.tuplesOut[instance];
      if (outgoing === undefined) continue;
      const implied = schema.impliedRoles[role] ?? [role];
      for (let i = 0; i < outgoing.length; i += 3) {
        if (outgoing[i + 2] !== tenant) continue;
        const object = outgoing[i] as number;
        const byRelation = schema.rulesByObjectRelation[facts.instanceType[object] as number];
        const rules = byRelation?.[outgoing[i + 1] as number];
        if (rules === undefined) continue;
        for (const rule of rules) {
          if (rule.subjectType !== instanceType || !implied.includes(rule.requires)) continue;
          if (rule.noDirectRoles && facts.hasDirectRole(user, object, tenant)) continue;
          pending.push(object, rule.role);
        }
      }
    }
  }
  return Int32Array.from(found).sort();
}

/** A field of a resource as plans read it: `key`, `tenant`, else an attribute, descending into objects. */
export function planField(resource: PlanResource, field: string): unknown {
  const [name = "", ...rest] = field.split(".");
  const root =
    name === "key"
      ? resource.key
      : name === "tenant"
        ? resource.tenant
        : resource.attributes !== undefined && Object.hasOwn(resource.attributes, name)
          ? resource.attributes[name]
          : undefined;
  return descend(root, rest);
}

/** Whether a resource satisfies a plan's condition: the reference semantics every adapter must match. */
export function matchesPlan(expression: PlanExpression, resource: PlanResource): boolean {
  switch (expression.operator) {
    case "and":
      return expression.operands.every((e) => matchesPlan(e, resource));
    case "or":
      return expression.operands.some((e) => matchesPlan(e, resource));
    case "not":
      return !matchesPlan(expression.operands[0], resource);
    default:
      return operatorHolds(
        CONDITION_OPERATOR[expression.operator],
        planField(resource, expression.field),
        expression.value,
      );
  }
}
