import type { Kysely } from "kysely";
import { newId } from "../../lib/ids.ts";
import { now } from "../../lib/time.ts";

/**
 * Every environment has the built-in resources `__user` (user attributes) and `__tenant` (tenant attributes) from
 * its creation; before, `__user` came with the first user-attribute write. This gives the environments that lack
 * them theirs. The values are written out here, as they were at this migration (never edit it).
 */
const BUILT_IN = [
  { key: "__user", name: "User", description: "the attributes of users" },
  { key: "__tenant", name: "Tenant", description: "the attributes of tenants" },
];

export async function up(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as Kysely<{
    environments: { id: string; organization_id: string; project_id: string };
    resources: Record<string, string | number | null>;
  }>;
  const at = now();
  const fixed = { urn: null, type_attributes: null, built_in: 1, created_at: at, updated_at: at };
  for (const r of BUILT_IN) {
    const lacking = await db
      .selectFrom("environments")
      .select(["id", "organization_id", "project_id"])
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("resources")
              .select("resources.id")
              .whereRef("resources.environment_id", "=", "environments.id")
              .where("resources.key", "=", r.key),
          ),
        ),
      )
      .execute();
    // In batches: SQLite binds at most 32,766 parameters a statement.
    for (let i = 0; i < lacking.length; i += 1000) {
      await db
        .insertInto("resources")
        .values(
          lacking.slice(i, i + 1000).map(({ id, organization_id, project_id }) => ({
            ...r,
            ...fixed,
            id: newId(),
            organization_id,
            project_id,
            environment_id: id,
          })),
        )
        .execute();
    }
  }
}
