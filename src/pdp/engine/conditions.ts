// Permit's condition language, compiled once into closures so that evaluating a condition set on the check path
// is a few function calls with no parsing and no allocation.
//
//   node     := {"allOf": [node...]} | {"anyOf": [node...]} | {"not": node} | {"<path>": {"<operator>": value}}
//   path     := user.<attr>[.<field>...] | resource.<attr>[...] | context.<name>[...]
//   value    := any JSON value, or {"ref": "<path>"} to compare with another attribute
//
// A node with several keys (or a leaf with several operators) needs all of them to hold; `{}` holds.
// Every comparison is false when the attribute is missing, including the negative operators (not-equals, not-in,
// not-contains), so an absent attribute never grants access; wrap a condition in "not" to match absence.

import type { Attributes } from "./types.ts";

export interface ConditionProblem {
  /** Where the problem is, e.g. "allOf[1].user.age.greater-than". */
  path: string;
  message: string;
}

/** The stored profile of a user, as conditions see it. */
export interface UserProfile {
  email?: string;
  first_name?: string;
  last_name?: string;
  attributes?: Attributes;
}

/**
 * What a condition can read. One instance is reused for every evaluation: the engine overwrites the fields,
 * so merged attribute objects (request over stored) are never built.
 */
export class ConditionInput {
  userKey = "";
  userRequest: UserProfile | undefined = undefined;
  userStored: UserProfile | undefined = undefined;
  resourceType = "";
  resourceKey: string | undefined = undefined;
  resourceTenant = "";
  resourceRequest: Attributes | undefined = undefined;
  resourceStored: Attributes | undefined = undefined;
  context: Attributes | undefined = undefined;

  /** The resource's side: what the request says of it and what the PDP stores of its instance (none: undefined). */
  setResource(
    requested: { type: string; key?: string | undefined; attributes?: Attributes | undefined },
    tenant: string,
    stored: Attributes | undefined,
  ): void {
    this.resourceType = requested.type;
    this.resourceKey = requested.key;
    this.resourceTenant = tenant;
    this.resourceRequest = requested.attributes;
    this.resourceStored = stored;
  }
}

export type Predicate = (input: ConditionInput) => boolean;
type Getter = (input: ConditionInput) => unknown;

const ALWAYS: Predicate = () => true;
const NEVER: Predicate = () => false;

function ownValue(object: Attributes | undefined, name: string): unknown {
  return object !== undefined && Object.hasOwn(object, name) ? object[name] : undefined;
}

function userValue(input: ConditionInput, name: string): unknown {
  if (name === "key") return input.userKey;
  const requested = ownValue(input.userRequest?.attributes, name);
  if (requested !== undefined) return requested;
  const stored = ownValue(input.userStored?.attributes, name);
  if (stored !== undefined) return stored;
  if (name === "email" || name === "first_name" || name === "last_name") {
    return input.userRequest?.[name] ?? input.userStored?.[name];
  }
  return undefined;
}

function resourceValue(input: ConditionInput, name: string): unknown {
  if (name === "type") return input.resourceType;
  if (name === "key") return input.resourceKey;
  if (name === "tenant") return input.resourceTenant;
  const requested = ownValue(input.resourceRequest, name);
  return requested !== undefined ? requested : ownValue(input.resourceStored, name);
}

const ROOTS: Record<string, (input: ConditionInput, name: string) => unknown> = {
  user: userValue,
  resource: resourceValue,
  context: (input, name) => ownValue(input.context, name),
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function compilePath(path: string): Getter | undefined {
  const segments = path.split(".");
  const root = ROOTS[segments[0] ?? ""];
  const name = segments[1];
  if (root === undefined || name === undefined || segments.some((s) => s === "")) return undefined;
  const fields = segments.slice(2);
  if (fields.length === 0) return (input) => root(input, name);
  return (input) => descend(root(input, name), fields);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}

function includesEqual(list: unknown[], value: unknown): boolean {
  for (const item of list) if (deepEqual(item, value)) return true;
  return false;
}

/** Numbers compare as numbers, strings lexicographically (ISO-8601 timestamps order correctly); nothing else. */
function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function contains(actual: unknown, expected: unknown): boolean {
  if (typeof actual === "string") return typeof expected === "string" && actual.includes(expected);
  return Array.isArray(actual) && includesEqual(actual, expected);
}

interface Operator {
  /** Called only when the attribute is present. */
  test(actual: unknown, expected: unknown): boolean;
  /** Checks a literal operand; returns what is wrong with it. */
  operandProblem(expected: unknown): string | undefined;
}

const anyOperand = (): undefined => undefined;
const comparableOperand = (e: unknown): string | undefined =>
  typeof e === "number" || typeof e === "string" ? undefined : "expects a number or a string";
const stringOperand = (e: unknown): string | undefined =>
  typeof e === "string" ? undefined : "expects a string";
const arrayOperand = (e: unknown): string | undefined => (Array.isArray(e) ? undefined : "expects an array");

function ordering(accept: (order: number) => boolean): Operator {
  return {
    test: (a, e) => {
      const order = compare(a, e);
      return order !== undefined && accept(order);
    },
    operandProblem: comparableOperand,
  };
}

const arrayContains: Operator = {
  test: (a, e) => Array.isArray(a) && includesEqual(a, e),
  operandProblem: anyOperand,
};

const OPERATORS: Record<string, Operator> = {
  equals: { test: deepEqual, operandProblem: anyOperand },
  "not-equals": { test: (a, e) => !deepEqual(a, e), operandProblem: anyOperand },
  "greater-than": ordering((o) => o > 0),
  "greater-than-equals": ordering((o) => o >= 0),
  "less-than": ordering((o) => o < 0),
  "less-than-equals": ordering((o) => o <= 0),
  contains: { test: contains, operandProblem: anyOperand },
  "not-contains": {
    test: (a, e) => (typeof a === "string" || Array.isArray(a)) && !contains(a, e),
    operandProblem: anyOperand,
  },
  in: { test: (a, e) => Array.isArray(e) && includesEqual(e, a), operandProblem: arrayOperand },
  "not-in": { test: (a, e) => Array.isArray(e) && !includesEqual(e, a), operandProblem: arrayOperand },
  array_contains: arrayContains,
  "array-contains": arrayContains,
  array_subset: {
    test: (a, e) => Array.isArray(a) && Array.isArray(e) && a.every((item) => includesEqual(e, item)),
    operandProblem: arrayOperand,
  },
  array_superset: {
    test: (a, e) => Array.isArray(a) && Array.isArray(e) && e.every((item) => includesEqual(a, item)),
    operandProblem: arrayOperand,
  },
  array_intersect: {
    test: (a, e) => Array.isArray(a) && Array.isArray(e) && a.some((item) => includesEqual(e, item)),
    operandProblem: arrayOperand,
  },
  "starts-with": {
    test: (a, e) => typeof a === "string" && typeof e === "string" && a.startsWith(e),
    operandProblem: stringOperand,
  },
  "ends-with": {
    test: (a, e) => typeof a === "string" && typeof e === "string" && a.endsWith(e),
    operandProblem: stringOperand,
  },
};

/** The operator names accepted by the condition language. */
export const CONDITION_OPERATORS: readonly string[] = Object.keys(OPERATORS);

/** Whether the operator holds for a present value (filter plans reuse the language's own comparisons). */
export function operatorHolds(name: string, actual: unknown, expected: unknown): boolean {
  const operator = Object.hasOwn(OPERATORS, name) ? OPERATORS[name] : undefined;
  return operator !== undefined && actual !== undefined && operator.test(actual, expected);
}

/** Reads a path (`user.<attr>`, `resource.<attr>`, `context.<name>`, with further fields) from an input. */
export function pathReader(path: string): ((input: ConditionInput) => unknown) | undefined {
  return compilePath(path);
}

/** A value's field at a dotted path below it, as conditions descend into object attributes. */
export function descend(value: unknown, fields: readonly string[]): unknown {
  for (const field of fields) {
    if (!isPlainObject(value)) return undefined;
    value = ownValue(value, field);
  }
  return value;
}

function allOf(parts: Predicate[]): Predicate {
  if (parts.length === 0) return ALWAYS;
  if (parts.length === 1) return parts[0] as Predicate;
  return (input) => {
    for (const part of parts) if (!part(input)) return false;
    return true;
  };
}

function anyOf(parts: Predicate[]): Predicate {
  if (parts.length === 1) return parts[0] as Predicate;
  return (input) => {
    for (const part of parts) if (part(input)) return true;
    return false;
  };
}

class Compiler {
  readonly problems: ConditionProblem[] = [];

  private problem(path: string, message: string): Predicate {
    this.problems.push({ path, message });
    return NEVER;
  }

  node(node: unknown, path: string): Predicate {
    if (!isPlainObject(node)) return this.problem(path, "a condition must be an object");
    const parts: Predicate[] = [];
    for (const [key, value] of Object.entries(node)) {
      const at = path === "" ? key : `${path}.${key}`;
      if (key === "allOf" || key === "anyOf") {
        if (!Array.isArray(value)) {
          parts.push(this.problem(at, `${key} expects an array of conditions`));
          continue;
        }
        const children = value.map((child, i) => this.node(child, `${at}[${i}]`));
        parts.push(key === "allOf" ? allOf(children) : anyOf(children));
      } else if (key === "not") {
        const inner = this.node(value, at);
        parts.push((input) => !inner(input));
      } else {
        parts.push(this.leaf(key, value, at));
      }
    }
    return allOf(parts);
  }

  private leaf(path: string, comparisons: unknown, at: string): Predicate {
    const getter = compilePath(path);
    if (getter === undefined) {
      return this.problem(
        at,
        `unknown key "${path}": expected allOf, anyOf, not, or an attribute path such as user.<attribute>, resource.<attribute> or context.<name>`,
      );
    }
    if (!isPlainObject(comparisons) || Object.keys(comparisons).length === 0) {
      return this.problem(at, 'expected an object of comparisons, e.g. {"equals": "value"}');
    }
    const parts: Predicate[] = [];
    for (const [name, operand] of Object.entries(comparisons)) {
      parts.push(this.comparison(getter, name, operand, `${at}.${name}`));
    }
    return allOf(parts);
  }

  private comparison(getter: Getter, name: string, operand: unknown, at: string): Predicate {
    const operator = Object.hasOwn(OPERATORS, name) ? OPERATORS[name] : undefined;
    if (operator === undefined) {
      return this.problem(at, `unknown operator "${name}"; supported: ${CONDITION_OPERATORS.join(", ")}`);
    }
    const test = operator.test;
    if (isPlainObject(operand) && Object.keys(operand).length === 1 && Object.hasOwn(operand, "ref")) {
      const ref = typeof operand.ref === "string" ? compilePath(operand.ref) : undefined;
      if (ref === undefined) return this.problem(`${at}.ref`, "ref expects an attribute path");
      return (input) => {
        const actual = getter(input);
        return actual !== undefined && test(actual, ref(input));
      };
    }
    const problem = operator.operandProblem(operand);
    if (problem !== undefined) return this.problem(at, `${name} ${problem}`);
    return (input) => {
      const actual = getter(input);
      return actual !== undefined && test(actual, operand);
    };
  }
}

/** Compiles a condition document. When it has problems the predicate never matches (fail closed). */
export function compileConditions(conditions: unknown): {
  predicate: Predicate;
  problems: ConditionProblem[];
} {
  const compiler = new Compiler();
  const predicate = compiler.node(conditions ?? {}, "");
  return { predicate: compiler.problems.length === 0 ? predicate : NEVER, problems: compiler.problems };
}

/** Lists what is wrong with a condition document; an empty list means the engine accepts it. */
export function validateConditions(conditions: unknown): ConditionProblem[] {
  return compileConditions(conditions).problems;
}
