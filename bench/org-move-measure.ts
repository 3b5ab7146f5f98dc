/**
 * Times `gatehouse orgs export` and `orgs import` of one organization of `rows` rows (users, with a tenant every
 * 20th row), from one database into a fresh one, with the CLI's own function. The code runs from IMPORT_SRC (a
 * worktree; default this one), so old and new code can be run in turns on the same data shape.
 * Usage: node --import tsx bench/org-move-measure.ts sqlite|postgres [rows]
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ExpressionBuilder } from "kysely";
import type { Database } from "../src/db/types.ts";
import { freshPgSchema } from "./lib/pg.ts";
import { Resources } from "./lib/procs.ts";

const dialect = process.argv[2] ?? "sqlite";
const total = Number(process.argv[3] ?? 200_000);
const source = path.resolve(process.env["IMPORT_SRC"] ?? process.cwd());
const pgUrl = process.env["BENCH_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

const { openStore, migrateToLatest } = await import(path.join(source, "src/db/store.ts"));
const { createOrganizationRecords } = await import(path.join(source, "src/domain/organization-records.ts"));
const { orgsCommand } = await import(path.join(source, "src/cli/orgs.ts"));
const { createSecretBox } = await import(path.join(source, "src/lib/secrets.ts"));
const exportNamesRegion = fs
  .readFileSync(path.join(source, "src/cli/usage.ts"), "utf8")
  .includes("--to REGION");

const res = new Resources();
try {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "org-move-measure-"));
  res.defer(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const location = async (name: string) =>
    dialect === "postgres"
      ? { databaseUrl: (await freshPgSchema(res, pgUrl)).url }
      : { sqliteFile: path.join(dir, `${name}.db`) };
  const from = await location("from");
  const to = await location("to");
  const box = createSecretBox("bench-secret-key-that-is-long-enough-00");

  const seed = openStore(from);
  await migrateToLatest(seed);
  const org = await createOrganizationRecords(seed.db, box, { key: "moving", name: "Moving" });
  const env = await seed.db
    .selectFrom("environments")
    .select(["id", "project_id"])
    .where("organization_id", "=", org.organization.id)
    .where("key", "=", "production")
    .executeTakeFirstOrThrow();
  const at = new Date().toISOString();
  const scope = { organization_id: org.organization.id, project_id: env.project_id, environment_id: env.id };
  const tenants = Math.floor(total / 20);
  for (let i = 0; i < tenants; i += 1000) {
    const n = Math.min(1000, tenants - i);
    await seed.db
      .insertInto("tenants")
      .values(
        Array.from({ length: n }, (_, k) => ({
          id: crypto.randomUUID(),
          ...scope,
          key: `t${i + k}`,
          name: `Tenant ${i + k}`,
          description: null,
          attributes: JSON.stringify({ tier: "gold" }),
          created_at: at,
          updated_at: at,
          last_action_at: at,
        })),
      )
      .execute();
  }
  for (let i = 0; i < total - tenants; i += 1000) {
    const n = Math.min(1000, total - tenants - i);
    await seed.db
      .insertInto("users")
      .values(
        Array.from({ length: n }, (_, k) => ({
          id: crypto.randomUUID(),
          ...scope,
          key: `user-${i + k}`,
          email: `user-${i + k}@example.com`,
          first_name: "Ann",
          last_name: "Example",
          attributes: JSON.stringify({ department: "sales", level: (i + k) % 7 }),
          created_at: at,
          updated_at: at,
        })),
      )
      .execute();
  }
  await seed.close();

  const file = path.join(dir, "moving.jsonl");
  const run = async (args: string[], where: object) => {
    const started = performance.now();
    const code = await orgsCommand(
      args,
      { openStore: () => openStore(where), loadSecretBox: () => box, print: () => {} },
      {},
    );
    if (code !== 0) throw new Error(`${args[0]}: exit ${code}`);
    return (performance.now() - started) / 1000;
  };
  const exportSeconds = await run(
    ["export", "--org", "moving", ...(exportNamesRegion ? ["--to", "us"] : []), "--file", file],
    from,
  );
  const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).length;
  const importSeconds = await run(["import", "--file", file], to);
  const check = openStore(to);
  const imported = await check.db
    .selectFrom("users")
    .select((eb: ExpressionBuilder<Database, "users">) => eb.fn.countAll().as("n"))
    .where("organization_id", "=", org.organization.id)
    .executeTakeFirstOrThrow();
  await check.close();
  console.log(
    JSON.stringify({
      dialect,
      source,
      rows: total,
      file_lines: lines,
      export_s: Number(exportSeconds.toFixed(2)),
      import_s: Number(importSeconds.toFixed(2)),
      users_imported: Number(imported.n),
    }),
  );
} finally {
  await res.close();
}
