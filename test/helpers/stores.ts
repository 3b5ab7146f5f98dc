import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { ensurePgSchema, migrateToLatest, openStore, type Dialect, type Store } from "../../src/db/store.ts";

export const PG_URL = process.env["TEST_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

async function pgAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whether PostgreSQL answers within a few tries: a loaded machine (or a moment at max_connections) is not "down". */
async function pgReachable(): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await pgAnswers()) return true;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return false;
}

const reachable = await pgReachable();
if (!reachable && process.env["CI"] === "true") {
  throw new Error(
    `PostgreSQL is not reachable at ${PG_URL}; under CI=true the PostgreSQL half of the suite must run`,
  );
}

/** How each dialect's half of a suite runs: PostgreSQL is skipped (and said so) only outside CI. */
export const DIALECTS: { dialect: Dialect; skip: string | false }[] = [
  { dialect: "sqlite", skip: false },
  { dialect: "postgres", skip: reachable ? false : `PostgreSQL not reachable at ${PG_URL}` },
];

export interface TestStore extends Store {
  /** SQLite file or PostgreSQL schema, for tests that reopen the same database from another process. */
  location: { sqliteFile?: string; databaseUrl?: string; pgSchema?: string };
}

/** A fresh database, migrated unless told not to: a new SQLite file, or a new PostgreSQL schema. Dropped on close. */
export async function freshStore(dialect: Dialect, { migrate = true } = {}): Promise<TestStore> {
  const id = `t_${process.pid}_${randomBytes(4).toString("hex")}`;
  if (dialect === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-test-"));
    const sqliteFile = path.join(dir, "gatehouse.db");
    const store = openStore({ sqliteFile });
    if (migrate) await migrateToLatest(store);
    return {
      ...store,
      location: { sqliteFile },
      async close() {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  await ensurePgSchema(PG_URL, id);
  const store = openStore({ databaseUrl: PG_URL, pgSchema: id, pgPoolSize: 4 });
  if (migrate) await migrateToLatest(store);
  return {
    ...store,
    location: { databaseUrl: PG_URL, pgSchema: id },
    async close() {
      await store.close();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists "${id}" cascade`);
      await client.end();
    },
  };
}

/** Settings that put `gatehouse serve` on a fresh database of `dialect`, and how to drop it afterwards. */
export async function freshDatabase(
  dialect: string,
): Promise<{ settings: Record<string, string>; drop: () => Promise<void> }> {
  if (dialect === "sqlite") return { settings: { DATABASE_URL: "" }, drop: async () => {} };
  const schema = `t_e2e_${process.pid}_${randomBytes(4).toString("hex")}`;
  await ensurePgSchema(PG_URL, schema);
  const url = new URL(PG_URL);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return {
    settings: { DATABASE_URL: url.toString() },
    async drop() {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}
