import path from "node:path";
import { migrateToLatest, openStore, type Dialect, type Store } from "../../src/db/store.ts";
import { createSecretBox } from "../../src/lib/secrets.ts";
import { createOrganizationRecords } from "../../src/domain/organization-records.ts";
import { settings } from "./config.ts";
import { freshPgSchema } from "./pg.ts";
import type { Resources } from "./procs.ts";

/** A migrated database of one organization, for scenarios that measure storage without a server. */
export interface BenchStore {
  store: Store;
  /** The SQLite file, for the writer and reader threads; undefined on PostgreSQL. */
  sqliteFile: string | undefined;
  organizationId: string;
  projectId: string;
  environmentId: string;
}

/**
 * A fresh SQLite file or PostgreSQL schema (removed when the scenario ends), migrated, with one organization; the
 * caller closes the store.
 */
export async function openBenchStore(res: Resources, dialect: Dialect): Promise<BenchStore> {
  const sqliteFile = dialect === "sqlite" ? path.join(res.tempDir("store"), "gatehouse.db") : undefined;
  const store = sqliteFile
    ? openStore({ sqliteFile })
    : openStore({ databaseUrl: (await freshPgSchema(res, settings.pgUrl)).url });
  await migrateToLatest(store);
  const box = createSecretBox("bench-secret-key-that-is-long-enough-00");
  const { organization } = await createOrganizationRecords(store.db, box, { key: "bench", name: "Bench" });
  const env = await store.db
    .selectFrom("environments")
    .select(["id", "project_id"])
    .where("organization_id", "=", organization.id)
    .where("key", "=", "production")
    .executeTakeFirstOrThrow();
  return {
    store,
    sqliteFile,
    organizationId: organization.id,
    projectId: env.project_id,
    environmentId: env.id,
  };
}
