/**
 * Times a role assignment import the way the control-plane scenario does it (POST role_assignments/bulk, 1,000
 * items a request, 2 requests in flight), short enough for an A/B: `users` users first, then `assignments`
 * assignments spread over 3 roles and 100 tenants, never the same one twice. Checks afterwards that the database
 * holds exactly that many. The server runs from IMPORT_SRC (a worktree; default this one), so old and new code can
 * be run in turns. Usage: node --import tsx bench/import-measure.ts sqlite|postgres [assignments] [users]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Api } from "./lib/http.ts";
import { freshPgSchema } from "./lib/pg.ts";
import { BOOTSTRAP_KEY, Resources, startGatehouse } from "./lib/procs.ts";
import { FACTS, SCHEMA } from "./lib/seed.ts";

const dialect = process.argv[2] ?? "sqlite";
const total = Number(process.argv[3] ?? 100_000);
const userCount = Number(process.argv[4] ?? 20_000);
const source = process.env["IMPORT_SRC"];
const ROLES = ["viewer", "editor", "admin"];
const TENANTS = 100;

async function send(
  count: number,
  make: (from: number, to: number) => unknown,
  post: (b: unknown) => Promise<unknown>,
) {
  const requests = Math.ceil(count / 1000);
  let next = 0;
  const start = Date.now();
  const worker = async () => {
    for (let j = next++; j < requests; j = next++) {
      await post(make(j * 1000, Math.min(count, j * 1000 + 1000)));
    }
  };
  await Promise.all([worker(), worker()]);
  return (Date.now() - start) / 1000;
}

const res = new Resources();
try {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "import-measure-"));
  res.defer(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  const pgUrl = process.env["BENCH_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
  const dbUrl = dialect === "postgres" ? (await freshPgSchema(res, pgUrl)).url : undefined;
  const cwd = process.cwd();
  if (source) process.chdir(source);
  const server = await startGatehouse(res, { dataDir, ...(dbUrl && { databaseUrl: dbUrl }), pdp: false });
  process.chdir(cwd);
  const api = new Api(server.apiUrl, BOOTSTRAP_KEY);
  await api.call("POST", `${SCHEMA}/resources`, { key: "document", name: "Document", actions: { read: {} } });
  for (const role of ROLES) {
    await api.call("POST", `${SCHEMA}/roles`, { key: role, name: role, permissions: ["document:read"] });
  }
  await api.call("POST", `${FACTS}/bulk/tenants`, {
    operations: Array.from({ length: TENANTS }, (_, t) => ({ key: `t${t}`, name: `Tenant ${t}` })),
  });
  await send(
    userCount,
    (from, to) => ({ operations: Array.from({ length: to - from }, (_, k) => ({ key: `u${from + k}` })) }),
    (body) => api.call("PUT", `${FACTS}/bulk/users`, body),
  );
  const seconds = await send(
    total,
    (from, to) =>
      Array.from({ length: to - from }, (_, k) => {
        const idx = from + k;
        const user = idx % userCount;
        const round = Math.floor(idx / userCount);
        return {
          user: `u${user}`,
          role: ROLES[round % ROLES.length],
          tenant: `t${(user + 7 * round) % TENANTS}`,
        };
      }),
    (body) => api.call("POST", `${FACTS}/role_assignments/bulk`, body),
  );
  const count = await api.call("GET", `${FACTS}/role_assignments?include_total_count=true&per_page=1`);
  const held = Number((count.json as { total_count: number }).total_count);
  if (held !== total) throw new Error(`the database holds ${held} assignments, not ${total}`);
  const load = os.loadavg()[0]?.toFixed(2);
  console.log(
    `${source ?? "this worktree"} ${dialect}: ${total} assignments in ${seconds.toFixed(2)} s, ` +
      `${Math.round(total / seconds)}/s (load ${load})`,
  );
} finally {
  await res.close();
}
