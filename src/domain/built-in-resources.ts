import type { Db } from "../db/db.ts";
import { newId } from "../lib/ids.ts";
import { now } from "../lib/time.ts";
import type { Change } from "../pdp/engine/types.ts";

/** The built-in resource whose attributes are the user attributes. */
export const USER_RESOURCE_KEY = "__user";

/**
 * The resources every environment has from its creation, as in Permit: `__user` holds the user attributes,
 * `__tenant` the tenant attributes. Gatehouse manages them (readable, attributes writable, never deleted); resource
 * lists show them with `include_built_in=true`, and the PDP's data leaves them out (they have no actions).
 */
export const BUILT_IN_RESOURCES = [
  { key: USER_RESOURCE_KEY, name: "User", description: "the attributes of users" },
  { key: "__tenant", name: "Tenant", description: "the attributes of tenants" },
] as const;

/** The change records of a new environment's built-in resources: the feed describes every resource. */
export const builtInResourceChanges = (): Change[] =>
  BUILT_IN_RESOURCES.map((r) => ({
    kind: "resource",
    op: "upsert",
    data: { key: r.key, actions: [], attributes: {}, action_groups: {}, roles: {}, relations: {} },
  }));

type EnvironmentColumns = { id: string; organization_id: string; project_id: string };

/** Inserts the built-in resources these environments lack, inside the caller's transaction. */
export async function ensureBuiltInResources(
  trx: Db,
  environments: readonly EnvironmentColumns[],
): Promise<void> {
  const at = now();
  // In batches: SQLite binds at most 32,766 parameters a statement.
  for (let i = 0; i < environments.length; i += 1000) {
    await trx
      .insertInto("resources")
      .values(
        environments.slice(i, i + 1000).flatMap((env) =>
          BUILT_IN_RESOURCES.map((r) => ({
            id: newId(),
            organization_id: env.organization_id,
            project_id: env.project_id,
            environment_id: env.id,
            key: r.key,
            name: r.name,
            description: r.description,
            urn: null,
            type_attributes: null,
            built_in: 1,
            created_at: at,
            updated_at: at,
          })),
        ),
      )
      .onConflict((oc) => oc.columns(["environment_id", "key"]).doNothing())
      .execute();
  }
}
