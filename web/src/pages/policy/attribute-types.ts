// The declared types of attributes (user attributes, a resource's attributes) and the comparisons each can hold:
// the condition builder offers the declared attributes and refuses, with a sentence, a comparison the engine
// would accept but that can never be true for a value of that type (`user.level greater-than "high"` on a string).

export type AttributeType =
  "bool" | "number" | "string" | "time" | "array" | "json" | "object" | "object_array";

/** An attribute a condition may read: its path (`user.level`) and declared type. */
export interface DeclaredAttribute {
  path: string;
  type: AttributeType;
  description?: string;
}

const ORDERING = new Set(["greater-than", "greater-than-equals", "less-than", "less-than-equals"]);
const EQUALITY = new Set(["equals", "not-equals"]);
const MEMBERSHIP = new Set(["in", "not-in"]);
const TEXT = new Set(["contains", "not-contains", "starts-with", "ends-with"]);
const ARRAY = new Set([
  "contains",
  "not-contains",
  "array_contains",
  "array-contains",
  "array_subset",
  "array_superset",
  "array_intersect",
]);

const NOUN: Record<AttributeType, string> = {
  bool: "a true/false",
  number: "a number",
  string: "a text",
  time: "a time",
  array: "an array",
  json: "a JSON",
  object: "an object",
  object_array: "an array of objects",
};

const VALUE: Record<AttributeType, string> = {
  bool: "true or false",
  number: "a number",
  string: "text",
  time: "a date-time such as 2030-01-31T12:00:00Z",
  array: "an array",
  json: "JSON",
  object: "an object",
  object_array: "an array",
};

/** The operators that can hold for a value of the type (undefined: any). */
const OPERATORS_OF: Partial<Record<AttributeType, Set<string>>> = {
  bool: new Set([...EQUALITY, ...MEMBERSHIP]),
  number: new Set([...EQUALITY, ...MEMBERSHIP, ...ORDERING]),
  string: new Set([...EQUALITY, ...MEMBERSHIP, ...TEXT]),
  time: new Set([...EQUALITY, ...MEMBERSHIP, ...ORDERING]),
  array: new Set([...EQUALITY, ...ARRAY]),
  object_array: new Set([...EQUALITY, ...ARRAY]),
};

/** Whether a literal is a value of the type. */
function isOfType(type: AttributeType, value: unknown): boolean {
  switch (type) {
    case "bool":
      return typeof value === "boolean";
    case "number":
      return typeof value === "number";
    case "string":
      return typeof value === "string";
    case "time":
      return typeof value === "string" && !Number.isNaN(Date.parse(value));
    case "array":
    case "object_array":
      return Array.isArray(value);
    default:
      return true;
  }
}

const shown = (value: unknown) => JSON.stringify(value);

/**
 * Why `path operator value` can never hold for an attribute of the declared type, as a sentence; undefined when it
 * can (or the type is not declared, or the value is another attribute).
 */
export function typeProblem(
  attribute: DeclaredAttribute | undefined,
  operator: string,
  value: unknown,
): string | undefined {
  if (!attribute) return undefined;
  const { path, type } = attribute;
  const allowed = OPERATORS_OF[type];
  if (allowed && !allowed.has(operator)) {
    const kinds = [...allowed].join(", ");
    return `${path} is ${NOUN[type]} attribute: “${operator}” cannot hold for it (use ${kinds}).`;
  }
  if (MEMBERSHIP.has(operator)) {
    if (!Array.isArray(value)) return `“${operator}” needs a list of values, such as [1, 2].`;
    const odd = value.find((item) => !isOfType(type, item));
    return odd === undefined
      ? undefined
      : `${path} is ${NOUN[type]} attribute and ${shown(odd)} in the list is not ${VALUE[type]}: it never matches.`;
  }
  if (ARRAY.has(operator) && type !== "json" && type !== "object") return undefined;
  if (TEXT.has(operator))
    return typeof value === "string" ? undefined : `“${operator}” compares text: quote the value.`;
  if (isOfType(type, value)) return undefined;
  const hint =
    type === "string" && typeof value !== "string" ? ` Write "${String(value)}" to compare text.` : "";
  return `${path} is ${NOUN[type]} attribute and ${shown(value)} is not ${VALUE[type]}: this condition can never hold.${hint}`;
}
