import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

import { duplicate, invalid } from "../../lib/errors.ts";
import { envelope, type Page, type PageRequest } from "../../lib/pagination.ts";
import { listPage } from "../../domain/facts/list-pages.repo.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { TenantRow } from "../../domain/facts/facts.repo.ts";
import { attributesOrNull, Resolver, tenantChange, writeFacts } from "../../domain/facts/facts-write.ts";
import { assignmentChange, assignRoles } from "../../domain/facts/role-assignment-records.ts";
import { assignmentsOfUserInTenant } from "../role-assignments/role-assignments.repo.ts";
import { deleteAssignments } from "../../domain/facts/role-assignments.repo.ts";
import {
  insertUserRecord,
  listUserPage,
  patchUserRecord,
  userReads,
} from "../../domain/facts/user-records.ts";

import type { UserCreate, UserRead } from "../users/users.schemas.ts";
import { countTenants, listTenantsQuery, updateTenant } from "./tenants.repo.ts";
import type {
  TenantCreate,
  TenantListQuery,
  TenantRead,
  TenantUpdate,
  TenantUsersQuery,
} from "./tenants.schemas.ts";
import { createTenantRecords, deleteTenantRecords } from "../../domain/facts/tenant-records.ts";
import { namedPatch } from "../../lib/patch.ts";

/** `attributes` stays null for a tenant created without them; `description` is left out when never set. */
export const tenantRead = (row: TenantRow): TenantRead => ({
  id: row.id,
  key: row.key,
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  name: row.name,
  ...(row.description !== null && { description: row.description }),
  attributes: attributesOrNull(row.attributes),
  created_at: row.created_at,
  updated_at: row.updated_at,
  last_action_at: row.last_action_at,
});

export function createTenantsService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  return {
    async list(
      { environment }: EnvScope,
      q: TenantListQuery,
      p: PageRequest,
    ): Promise<TenantRead[] | Page<TenantRead>> {
      const { start, total } = await listPage(readDb, "tenants", environment.id, p, Boolean(q.search));
      const rows = await listTenantsQuery(
        readDb,
        environment.id,
        q.search,
        start.offset,
        p.perPage,
        start.after,
      ).execute();
      const data = rows.map(tenantRead);
      if (!q.include_total_count) return data;
      return envelope(data, total ?? (await countTenants(readDb, environment.id, q.search)), p);
    },

    async get({ environment }: EnvScope, tenantRef: string): Promise<TenantRead> {
      return tenantRead(await new Resolver(db, environment).requireTenant(tenantRef));
    },

    async create({ environment }: EnvScope, input: TenantCreate): Promise<TenantRead> {
      const [row] = await writeFacts(db, environment, (resolver, changes) =>
        createTenantRecords(resolver, [input], changes),
      );
      if (!row) throw new Error("tenant not created");
      return tenantRead(row);
    },

    async update({ environment }: EnvScope, tenantRef: string, input: TenantUpdate): Promise<TenantRead> {
      return writeFacts(db, environment, async (resolver, changes) => {
        const tenant = await resolver.requireTenant(tenantRef);
        const row = await updateTenant(resolver.db, environment.id, tenant.id, namedPatch(input));
        changes.push(tenantChange(row));
        return tenantRead(row);
      });
    },

    async remove({ environment }: EnvScope, tenantRef: string): Promise<void> {
      await writeFacts(db, environment, async (resolver, changes) =>
        deleteTenantRecords(resolver, [await resolver.requireTenant(tenantRef)], changes),
      );
    },

    /** Users holding any role in the tenant; always paginated. */
    async listUsers(
      { environment }: EnvScope,
      tenantRef: string,
      q: TenantUsersQuery,
      p: PageRequest,
    ): Promise<Page<UserRead>> {
      const tenant = await new Resolver(readDb, environment).requireTenant(tenantRef);
      return listUserPage(
        readDb,
        environment.id,
        {
          tenantId: tenant.id,
          search: q.search,
          role: q.role,
          includeInstanceRoles: q.include_resource_instance_roles,
        },
        p,
      );
    },

    /**
     * Creates the user when it does not exist (or updates the profile fields the body names) and assigns its
     * `role_assignments` in this tenant.
     */
    async addUser({ environment }: EnvScope, tenantRef: string, input: UserCreate): Promise<UserRead> {
      return writeFacts(db, environment, async (resolver, changes) => {
        const tenant = await resolver.requireTenant(tenantRef);
        const assignments = (input.role_assignments ?? []).map((a, i) => {
          if (a.tenant !== undefined && a.tenant !== tenant.key && a.tenant !== tenant.id) {
            throw invalid(`role assignment names tenant '${a.tenant}', not '${tenant.key}'`, [
              "body",
              "role_assignments",
              i,
              "tenant",
            ]);
          }
          return { ...a, tenant: tenant.key };
        });
        const found = await resolver.user(input.key);
        let user = found
          ? undefined
          : await insertUserRecord(resolver, { ...input, role_assignments: assignments }, changes);
        if (!user) {
          // Without `found`, a concurrent request created the user since the lookup: this one updates it.
          user = found ?? (await resolver.reloadUser(input.key));
          if (!user) throw duplicate("user", input.key);
          if (
            input.email !== undefined ||
            input.first_name !== undefined ||
            input.last_name !== undefined ||
            input.attributes !== undefined
          ) {
            user = await patchUserRecord(resolver, user, input, changes);
          }
          await assignRoles(resolver, user, assignments, changes, "skip", ["body", "role_assignments"]);
        }
        const [read] = await userReads(resolver.db, environment.id, [user]);
        if (!read) throw new Error("user read missing");
        return read;
      });
    },

    /** Removes every role the user holds in the tenant (tenant roles and roles on the tenant's instances). */
    async removeUser({ environment }: EnvScope, tenantRef: string, userRef: string): Promise<void> {
      await writeFacts(db, environment, async (resolver, changes) => {
        const tenant = await resolver.requireTenant(tenantRef);
        const user = await resolver.requireUser(userRef);
        const assignments = await assignmentsOfUserInTenant(resolver.db, environment.id, user.id, tenant.id);
        await deleteAssignments(
          resolver.db,
          environment.id,
          assignments.map((a) => a.id),
        );
        for (const a of assignments) changes.push(assignmentChange(a, "delete"));
      });
    },
  };
}

export type TenantsService = ReturnType<typeof createTenantsService>;
