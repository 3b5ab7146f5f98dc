import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Resources } from "./procs.ts";

/** A fresh PostgreSQL schema for one server process (dropped at clean-up); the URL selects it by search_path. */
export async function freshPgSchema(
  res: Resources,
  baseUrl: string,
): Promise<{ url: string; schema: string }> {
  const schema = `bench_${process.pid}_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`create schema "${schema}"`);
  } finally {
    await client.end();
  }
  res.defer(async () => {
    const dropper = new pg.Client({ connectionString: baseUrl });
    await dropper.connect();
    try {
      await dropper.query(`drop schema if exists "${schema}" cascade`);
    } finally {
      await dropper.end();
    }
  });
  const url = new URL(baseUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return { url: url.toString(), schema };
}

export async function pgReachable(baseUrl: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("select 1");
    return undefined;
  } catch (e) {
    return String(e);
  } finally {
    await client.end().catch(() => {});
  }
}
