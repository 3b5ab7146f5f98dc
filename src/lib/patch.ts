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
