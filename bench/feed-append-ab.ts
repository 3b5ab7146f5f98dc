/**
 * The change feed's cost per change, old code against this worktree's in turns: 50 transactions that each append
 * 1,000 role assignment changes (as a bulk request of 1,000 does), three rounds, on a fresh database (foreign keys
 * off, so only the feed is measured). Prints wall and process CPU time per change.
 * Usage: FEED_OLD=/path/to/old/worktree node --import tsx bench/feed-append-ab.ts sqlite|postgres
 */
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { sql } from "kysely";
import { openStore, migrateToLatest } from "../src/db/store.ts";
import * as fresh from "../src/changes/feed.ts";

const oldTree = process.env["FEED_OLD"];
if (!oldTree) throw new Error("FEED_OLD: the worktree of the code to compare with");
const old = (await import(path.join(path.resolve(oldTree), "src/changes/feed.ts"))) as typeof fresh;
const dialect = process.argv[2] ?? "sqlite";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "feed-ab-"));
let url: string | undefined;
const base = "postgres://postgres@127.0.0.1:5432/test";
const schema = `feedab_${randomBytes(4).toString("hex")}`;
if (dialect === "postgres") {
  const c = new pg.Client(base);
  await c.connect();
  await c.query(`create schema ${schema}`);
  await c.end();
  const u = new URL(base);
  u.searchParams.set("options", `-c search_path=${schema} -c session_replication_role=replica`);
  url = u.toString();
}
const store = openStore({ dataDir: dir, ...(url && { databaseUrl: url }) } as never);
await migrateToLatest(store);
if (dialect === "sqlite") await sql`pragma foreign_keys = off`.execute(store.db);
const at = new Date().toISOString();
await store.db
  .insertInto("environments")
  .values({
    id: "e",
    organization_id: "o",
    project_id: "p",
    key: "e",
    name: "e",
    revision: 0,
    created_at: at,
    updated_at: at,
  } as never)
  .execute();
const records = (n: number, r: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      ({
        kind: "role_assignment",
        op: "upsert",
        data: { user: `u${r}_${i}`, role: "viewer", tenant: `t${i % 100}`, resource_instance: null },
      }) as never,
  );
const out: Record<string, string[]> = { old: [], new: [] };
for (let round = 0; round < 3; round++) {
  for (const [name, impl] of [
    ["old", old],
    ["new", fresh],
  ] as const) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let j = 0; j < 50; j++) {
      await store.db
        .transaction()
        .execute((trx) => impl.appendChanges(trx as never, "e", records(1000, round * 100 + j)));
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    out[name]!.push(
      `${((wall * 1000) / 50000).toFixed(1)} µs wall, ${((cpu.user + cpu.system) / 50000).toFixed(1)} µs cpu`,
    );
  }
}
console.log(
  dialect,
  "per item (50 writes of 1,000 changes, 3 rounds interleaved, load",
  os.loadavg()[0]?.toFixed(1) + ")",
);
for (const [k, v] of Object.entries(out)) console.log(k.padEnd(4), v.join(" | "));
const n = await store.db
  .selectFrom("changes")
  .select((eb) => eb.fn.countAll().as("n"))
  .executeTakeFirstOrThrow();
console.log("rows in changes:", n.n);
await store.db.destroy();
fs.rmSync(dir, { recursive: true, force: true });
if (dialect === "postgres") {
  const c = new pg.Client(base);
  await c.connect();
  await c.query(`drop schema ${schema} cascade`);
  await c.end();
}
