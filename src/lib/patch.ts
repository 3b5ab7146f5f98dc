import { toJson } from "./json.ts";
import { now } from "./time.ts";

/**
 * The columns an update of a named object with attributes sets: the fields the body names (one it leaves out stays
 * as it is), the attributes as JSON text, and the time of the change.
 */
export const namedPatch = (input: {
  name?: string | undefined;
  description?: string | undefined;
  attributes?: Record<string, unknown> | undefined;
}) => ({
  ...(input.name !== undefined && { name: input.name }),
  ...(input.description !== undefined && { description: input.description }),
  ...(input.attributes !== undefined && { attributes: toJson(input.attributes) }),
  updated_at: now(),
});

/** The columns a new named object with attributes starts with: description and attributes null when left out. */
export const namedColumns = (
  input: {
    key: string;
    name: string;
    description?: string | undefined;
    attributes?: Record<string, unknown> | undefined;
  },
  at: string,
) => ({
  key: input.key,
  name: input.name,
  description: input.description ?? null,
  attributes: toJson(input.attributes),
  created_at: at,
  updated_at: at,
});
