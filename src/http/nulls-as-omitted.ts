type Schema = Record<string, unknown>;
type Prepare = (value: unknown) => void;

/** Whether a JSON schema admits `null`: a null type or branch, or no type at all (any value). */
function admitsNull(schema: Schema): boolean {
  const type = schema["type"];
  if (type === "null" || (Array.isArray(type) && type.includes("null"))) return true;
  const branches = (schema["anyOf"] ?? schema["oneOf"]) as Schema[] | undefined;
  if (branches) return branches.some(admitsNull);
  if (Array.isArray(schema["allOf"])) return (schema["allOf"] as Schema[]).every(admitsNull);
  if (Array.isArray(schema["enum"])) return schema["enum"].includes(null);
  if ("const" in schema) return schema["const"] === null;
  return type === undefined && !("not" in schema);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * What makes a body's `null` for an optional property read as if the property were left out, as Permit (and its
 * Python SDK, which sends `null` for every unset argument) has it: the property is deleted before validation, at
 * every depth (objects, array items, map values, union branches). Required properties, and optional ones whose
 * schema admits null (where null means "clear it"), keep their null. Undefined when the schema has nothing to do.
 */
export function nullsAsOmitted(schema: Schema): Prepare | undefined {
  const steps: Prepare[] = [];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    for (const branch of (schema[key] ?? []) as Schema[]) {
      const step = nullsAsOmitted(branch);
      if (step) steps.push(step);
    }
  }
  const properties = (schema["properties"] ?? {}) as Record<string, Schema>;
  const required = new Set((schema["required"] ?? []) as string[]);
  const optional = Object.keys(properties).filter((k) => !required.has(k) && !admitsNull(properties[k]!));
  if (optional.length > 0)
    steps.push((value) => {
      if (!isObject(value)) return;
      for (const key of optional) if (value[key] === null) delete value[key];
    });
  for (const [key, sub] of Object.entries(properties)) {
    const step = nullsAsOmitted(sub);
    if (step) steps.push((value) => isObject(value) && step(value[key]));
  }
  // Maps (Type.Record): each value.
  const values = [
    schema["additionalProperties"],
    ...Object.values((schema["patternProperties"] ?? {}) as Record<string, unknown>),
  ];
  for (const sub of values) {
    const step = isObject(sub) ? nullsAsOmitted(sub) : undefined;
    if (step) steps.push((value) => isObject(value) && Object.values(value).forEach(step));
  }
  const items = schema["items"];
  const itemStep = isObject(items) ? nullsAsOmitted(items) : undefined;
  if (itemStep) steps.push((value) => Array.isArray(value) && value.forEach(itemStep));
  if (steps.length === 0) return undefined;
  return (value) => {
    for (const step of steps) step(value);
  };
}
