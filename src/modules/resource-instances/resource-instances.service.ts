import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";
import type { Db } from "../../db/db.ts";

import { isUuid } from "../../lib/ids.ts";
import { fromJsonObject, toJson } from "../../lib/json.ts";
import { factLists, type PageRequest } from "../../lib/pagination.ts";
import { filteredPage } from "../../domain/facts/list-pages.repo.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import type { InstanceWithKeys } from "../../domain/facts/facts.repo.ts";
import { updateInstance } from "../../domain/facts/resource-instances.repo.ts";
import { instanceChange, Resolver, writeFacts, type Env } from "../../domain/facts/facts-write.ts";
import {
  countInstances,
  listInstancesQuery,
  tuplesOfInstances,
  type InstanceFilter,
} from "./resource-instances.repo.ts";
import type {
  ResourceInstanceCreate,
  ResourceInstanceListQuery,
  ResourceInstanceRead,
  ResourceInstanceUpdate,
} from "./resource-instances.schemas.ts";
import { writeInstanceRecords, deleteInstanceRecords } from "../../domain/facts/instance-records.ts";

type Relationships = ResourceInstanceRead["relationships"];

export const instanceRead = (row: InstanceWithKeys, relationships?: Relationships): ResourceInstanceRead => ({
  id: row.id,
  key: row.key,
  tenant: row.tenant_key,
  resource: row.resource_key,
  organization_id: row.organization_id,
  project_id: row.project_id,
  environment_id: row.environment_id,
  resource_id: row.resource_id,
  tenant_id: row.tenant_id,
  attributes: fromJsonObject(row.attributes),
  ...(relationships !== undefined && { relationships }),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** Reads with `relationships`: the tuples each instance is part of. */
async function detailedReads(
  db: Db,
  envId: string,
  rows: InstanceWithKeys[],
): Promise<ResourceInstanceRead[]> {
  const tuples = await tuplesOfInstances(
    db,
    envId,
    rows.map((r) => r.id),
  );
  return rows.map((row) =>
    instanceRead(
      row,
      tuples
        .filter((t) => t.subject_id === row.id || t.object_id === row.id)
        .map(({ subject, relation, object }) => ({ subject, relation, object })),
    ),
  );
}

export function createResourceInstancesService(deps: { db: Kysely<Database>; readDb: Kysely<Database> }) {
  const { db, readDb } = deps;

  /** Filters to ids; null when a named tenant or resource does not exist, so nothing can match. */
  async function resolveFilter(env: Env, q: ResourceInstanceListQuery): Promise<InstanceFilter | null> {
    const resolver = new Resolver(readDb, env);
    const filter: InstanceFilter = {};
    if (q.tenant !== undefined) {
      const tenant = await resolver.tenant(q.tenant);
      if (!tenant) return null;
      filter.tenantId = tenant.id;
    }
    if (q.resource !== undefined) {
      const resource = await resolver.resource(q.resource);
      if (!resource) return null;
      filter.resourceId = resource.id;
    }
    if (q.search !== undefined && q.search.length > 0) {
      filter.search = { keys: q.search, ids: q.search.filter(isUuid).map((s) => s.toLowerCase()) };
    }
    return filter;
  }

  async function page(env: Env, q: ResourceInstanceListQuery, p: PageRequest, detailed: boolean) {
    const { rows, total } = await filteredPage(
      readDb,
      "resource_instances",
      env.id,
      p,
      await resolveFilter(env, q),
      {
        rows: (db, envId, f, offset, limit, after) =>
          listInstancesQuery(db, envId, f, offset, limit, after).execute(),
        count: countInstances,
      },
    );
    return {
      data: detailed ? await detailedReads(readDb, env.id, rows) : rows.map((r) => instanceRead(r)),
      total,
    };
  }

  return {
    ...factLists<EnvScope, ResourceInstanceListQuery, ResourceInstanceRead>(page),

    async get(
      { environment }: EnvScope,
      instanceRef: string,
      detailed: boolean,
    ): Promise<ResourceInstanceRead> {
      const row = await new Resolver(db, environment).requireInstance(instanceRef);
      if (!detailed) return instanceRead(row);
      const [read] = await detailedReads(db, environment.id, [row]);
      if (!read) throw new Error("instance read missing");
      return read;
    },

    async create({ environment }: EnvScope, input: ResourceInstanceCreate): Promise<ResourceInstanceRead> {
      const [written] = await writeFacts(db, environment, (resolver, changes) =>
        writeInstanceRecords(resolver, [input], changes, "fail"),
      );
      if (!written) throw new Error("instance not created");
      return instanceRead(written.row);
    },

    async update(
      { environment }: EnvScope,
      instanceRef: string,
      input: ResourceInstanceUpdate,
    ): Promise<ResourceInstanceRead> {
      return writeFacts(db, environment, async (resolver, changes) => {
        const existing = await resolver.requireInstance(instanceRef);
        if (input.attributes === undefined) return instanceRead(existing);
        const updated = await updateInstance(resolver.db, environment.id, existing.id, {
          attributes: toJson(input.attributes),
          updated_at: now(),
        });
        const row = { ...existing, ...updated };
        changes.push(instanceChange(row));
        return instanceRead(row);
      });
    },

    async remove({ environment }: EnvScope, instanceRef: string): Promise<void> {
      await writeFacts(db, environment, async (resolver, changes) =>
        deleteInstanceRecords(resolver, [await resolver.requireInstance(instanceRef)], changes),
      );
    },
  };
}

export type ResourceInstancesService = ReturnType<typeof createResourceInstancesService>;
