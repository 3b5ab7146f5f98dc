import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { duplicate, invalid } from "../../lib/errors.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { InstanceWithKeys, TenantRow, UserRow } from "../../domain/facts/facts.repo.ts";
import { userChange, writeFactsInBulk } from "../../domain/facts/facts-write.ts";
import { assignRoles } from "../../domain/facts/role-assignment-records.ts";
import { deleteUsers, insertUsers, usersByKeys } from "../users/users.repo.ts";
import type { UserCreate } from "../users/users.schemas.ts";
import { newUserRow, replaceUserRecord, userDeleteChange } from "../../domain/facts/user-records.ts";
import { createTenantRecords, deleteTenantRecords } from "../../domain/facts/tenant-records.ts";
import type { TenantCreate } from "../tenants/tenants.schemas.ts";
import { deleteInstanceRecords, writeInstanceRecords } from "../../domain/facts/instance-records.ts";
import type { ResourceInstanceCreate } from "../resource-instances/resource-instances.schemas.ts";

type Empty = Record<string, never>;

function assertDistinct(keys: string[], what: string): void {
  const seen = new Set<string>();
  for (const [i, key] of keys.entries()) {
    if (seen.has(key)) throw invalid(`${what} '${key}' appears twice`, ["body", "operations", i]);
    seen.add(key);
  }
}

/**
 * Bulk writes of users, tenants and resource instances: each request is one transaction and one revision, and it
 * writes everything or (on the first error) nothing.
 */
export function createBulkService(deps: { db: Kysely<Database> }) {
  const { db } = deps;

  return {
    /** Creates users; one key that exists already is a 409. */
    async createUsers(scope: EnvScope, ops: UserCreate[]): Promise<Empty> {
      const env = scope.environment;
      assertDistinct(
        ops.map((o) => o.key),
        "user",
      );
      await writeFactsInBulk(db, env, async (resolver, changes) => {
        const rows = ops.map((o) => newUserRow(env, o));
        const inserted = await insertUsers(resolver.db, rows);
        const taken = rows.find((row) => !inserted.has(row.key));
        if (taken) throw duplicate("user", taken.key);
        for (const row of rows) {
          resolver.remember("user", row.key, row);
          changes.push(userChange(row));
        }
        for (const [i, op] of ops.entries()) {
          const row = rows[i] as UserRow;
          if (op.role_assignments?.length) {
            await assignRoles(resolver, row, op.role_assignments, changes, "skip", [
              "body",
              "operations",
              i,
              "role_assignments",
            ]);
          }
        }
      });
      return {};
    },

    /** Creates or replaces users (PUT semantics for each). */
    async replaceUsers(scope: EnvScope, ops: UserCreate[]): Promise<Empty> {
      const env = scope.environment;
      assertDistinct(
        ops.map((o) => o.key),
        "user",
      );
      await writeFactsInBulk(db, env, async (resolver, changes) => {
        const existing = new Map(
          (
            await usersByKeys(
              resolver.db,
              env.id,
              ops.map((o) => o.key),
            )
          ).map((u) => [u.key, u]),
        );
        const rows = ops.filter((o) => !existing.has(o.key)).map((o) => newUserRow(env, o));
        const inserted = await insertUsers(resolver.db, rows);
        const fresh = rows.filter((row) => inserted.has(row.key));
        if (fresh.length < rows.length) {
          // Keys a concurrent request created since the lookup: their users are replaced, as if sent later.
          const taken = rows.filter((row) => !inserted.has(row.key)).map((row) => row.key);
          for (const user of await usersByKeys(resolver.db, env.id, taken)) existing.set(user.key, user);
          const gone = taken.find((key) => !existing.has(key));
          if (gone) throw duplicate("user", gone);
        }
        for (const row of fresh) {
          resolver.remember("user", row.key, row);
          changes.push(userChange(row));
        }
        for (const [i, op] of ops.entries()) {
          const loc = ["body", "operations", i];
          const current = existing.get(op.key);
          if (current) {
            await replaceUserRecord(resolver, current, op, changes, loc);
          } else if (op.role_assignments?.length) {
            const row = await resolver.requireUser(op.key);
            await assignRoles(resolver, row, op.role_assignments, changes, "skip", [
              ...loc,
              "role_assignments",
            ]);
          }
        }
      });
      return {};
    },

    /** Deletes users (with their role assignments); one unknown user deletes none. */
    async deleteUsers(scope: EnvScope, refs: string[]): Promise<Empty> {
      const env = scope.environment;
      await writeFactsInBulk(db, env, async (resolver, changes) => {
        const users = new Map<string, UserRow>();
        for (const ref of refs) {
          const user = await resolver.requireUser(ref);
          users.set(user.id, user);
        }
        await deleteUsers(resolver.db, env.id, [...users.keys()]);
        for (const user of users.values()) changes.push(userDeleteChange(user.key));
      });
      return {};
    },

    async createTenants(scope: EnvScope, ops: TenantCreate[]): Promise<Empty> {
      const env = scope.environment;
      await writeFactsInBulk(db, env, (resolver, changes) => createTenantRecords(resolver, ops, changes));
      return {};
    },

    /** Deletes tenants with everything in them; one unknown tenant deletes none. */
    async deleteTenants(scope: EnvScope, refs: string[]): Promise<Empty> {
      const env = scope.environment;
      await writeFactsInBulk(db, env, async (resolver, changes) => {
        const tenants = new Map<string, TenantRow>();
        for (const ref of refs) {
          const tenant = await resolver.requireTenant(ref);
          tenants.set(tenant.id, tenant);
        }
        await deleteTenantRecords(resolver, [...tenants.values()], changes);
      });
      return {};
    },

    /** Creates instances or replaces their attributes. */
    async writeInstances(scope: EnvScope, ops: ResourceInstanceCreate[]): Promise<Empty> {
      const env = scope.environment;
      await writeFactsInBulk(db, env, (resolver, changes) =>
        writeInstanceRecords(resolver, ops, changes, "update", ["body", "operations"]),
      );
      return {};
    },

    /** Deletes instances (with their tuples and role assignments); one unknown instance deletes none. */
    async deleteInstances(scope: EnvScope, refs: string[]): Promise<Empty> {
      const env = scope.environment;
      await writeFactsInBulk(db, env, async (resolver, changes) => {
        const instances = new Map<string, InstanceWithKeys>();
        for (const ref of refs) {
          const instance = await resolver.requireInstance(ref);
          instances.set(instance.id, instance);
        }
        await deleteInstanceRecords(resolver, [...instances.values()], changes);
      });
      return {};
    },
  };
}

export type BulkService = ReturnType<typeof createBulkService>;
