// Over 500 lines on purpose: one scenario, one question (how fast are the control plane's writes, lists and imports,
// per database), whose steps share its servers and seeded data; the generic parts live in bench/lib/.
import { settings } from "../lib/config.ts";
import { Api, pool } from "../lib/http.ts";
import { freshPgSchema, pgReachable } from "../lib/pg.ts";
import { abServerMode, BOOTSTRAP_KEY, sleep, startGatehouse, type Gatehouse } from "../lib/procs.ts";
import { fmt, ms, type Cell } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { FACTS, SCHEMA } from "../lib/seed.ts";
import { meanInterval, signedPercent, withInterval, type Interval } from "../lib/stats.ts";
import { combine, runWrk, type WrkPlan, type WrkResult } from "../lib/wrk.ts";
import { rng } from "../lib/pdp-dataset.ts";

const ROLES = ["viewer", "editor", "admin"];
const TENANTS = 100;
/** Seconds the 1M role assignment import may take per database before it stops and reports what it did. */
const IMPORT_BUDGET_S = Number(process.env["BENCH_IMPORT_BUDGET_S"] ?? "120");

interface ImportResult {
  items: number;
  target: number;
  seconds: number;
  per_s: number;
  capped: boolean;
}

interface DialectResult {
  dialect: string;
  imports: { users: ImportResult; assignments: ImportResult };
  ops: Record<string, WrkResult>;
  /** `overhead`: the share of throughput the log costs, the mean over blocks, with its 95% interval. */
  apiLog: Record<string, { off: WrkResult; on: WrkResult; overhead: Interval }>;
  copy: {
    seed_seconds: number;
    resources_per_s: number;
    copy_seconds: number;
    resources: number;
    permissions: number;
  };
}

/** A load's figures as the results file keeps them. */
interface LoadBrief {
  rps: number;
  latency_us: WrkResult["latency_us"];
  requests: number;
}

export interface ControlPlaneData {
  dialects: {
    dialect: string;
    imports: DialectResult["imports"];
    ops: Record<string, LoadBrief>;
    /** The API log's cost per operation: throughput lost with it on (mean over blocks) and its 95% interval. */
    api_log: Record<
      string,
      { off: LoadBrief; on: LoadBrief; overhead: number; overhead_interval: [number, number] }
    >;
    copy: DialectResult["copy"];
  }[];
}

/** Sends `total` items in chunks of 1,000 (two requests in flight), stopping after `budgetS` seconds. */
async function importChunks(
  total: number,
  budgetS: number,
  make: (from: number, to: number) => unknown,
  send: (body: unknown) => Promise<unknown>,
): Promise<ImportResult> {
  const count = Math.ceil(total / 1000);
  const start = Date.now();
  let next = 0;
  let done = 0;
  let capped = false;
  const worker = async () => {
    for (;;) {
      if ((Date.now() - start) / 1000 > budgetS) {
        capped = next < count;
        return;
      }
      const j = next++;
      if (j >= count) return;
      const from = j * 1000;
      const to = Math.min(total, from + 1000);
      await send(make(from, to));
      done += to - from;
    }
  };
  await Promise.all([worker(), worker()]);
  const seconds = (Date.now() - start) / 1000;
  return { items: done, target: total, seconds, per_s: done / seconds, capped };
}

/** Issue 24's goals per database: 1M role assignments imported within `importS`; single writes at c=8. */
const GOALS: Record<string, { importS: number; writesPerS: number }> = {
  sqlite: { importS: 30, writesPerS: 2000 },
  postgres: { importS: 60, writesPerS: 1000 },
};
const IMPORT_GOAL_ITEMS = 1_000_000;
const SINGLE_WRITES = ["create user", "assign role"];

/** Blocks of the API log's A/B per operation. */
const AB_BLOCKS = 3;

/** `gatehouse serve` over the scenario's database, its API log on unless told. */
async function startServer(
  ctx: Context,
  dataDir: string,
  dbUrl: string | undefined,
  apiLog: "on" | "off" = "on",
): Promise<Gatehouse> {
  return startGatehouse(ctx.res, {
    dataDir,
    ...(dbUrl && { databaseUrl: dbUrl }),
    pdp: false,
    env: { GATEHOUSE_API_LOG: apiLog },
  });
}

async function runDialect(ctx: Context, dialect: string): Promise<DialectResult> {
  const sizes = settings.controlPlane;
  const dataDir = ctx.res.tempDir(`cp-${dialect}`);
  const dbUrl = dialect === "postgres" ? (await freshPgSchema(ctx.res, settings.pgUrl)).url : undefined;
  const server = await startServer(ctx, dataDir, dbUrl);
  const api = new Api(server.apiUrl, BOOTSTRAP_KEY);
  const log = (message: string) => ctx.log(`${dialect}: ${message}`);

  await api.call("POST", `${SCHEMA}/resources`, {
    key: "document",
    name: "Document",
    actions: { read: {}, write: {}, delete: {}, share: {} },
  });
  for (const [i, role] of ROLES.entries()) {
    await api.call("POST", `${SCHEMA}/roles`, {
      key: role,
      name: role,
      permissions: ["document:read", ...(i > 0 ? ["document:write"] : [])],
    });
  }
  await api.call("POST", `${FACTS}/bulk/tenants`, {
    operations: Array.from({ length: TENANTS }, (_, tenant) => ({
      key: `t${tenant}`,
      name: `Tenant ${tenant}`,
    })),
  });

  // ---- bulk imports ----
  const userCount = sizes.importUsers;
  const users = await importChunks(
    userCount,
    Number.POSITIVE_INFINITY,
    (from, to) => ({
      operations: Array.from({ length: to - from }, (_, k) => ({
        key: `u${from + k}`,
        email: `u${from + k}@example.com`,
        first_name: "User",
        last_name: `${from + k}`,
        attributes: { level: (from + k) % 10, department: "eng" },
      })),
    }),
    (body) => api.call("PUT", `${FACTS}/bulk/users`, body),
  );
  log(`imported ${fmt(users.items)} users in ${users.seconds.toFixed(1)} s (${fmt(users.per_s)}/s)`);
  // assignment idx -> user idx % U in tenant (user + 7 * round) % 100, round = idx / U: never the same twice
  const assignments = await importChunks(
    sizes.importAssignments,
    IMPORT_BUDGET_S,
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
  log(
    `imported ${fmt(assignments.items)} role assignments in ${assignments.seconds.toFixed(1)} s (${fmt(assignments.per_s)}/s)` +
      (assignments.capped ? `; STOPPED at the ${IMPORT_BUDGET_S} s budget` : ""),
  );

  // ---- single operations under load ----
  const headers = { "content-type": "application/json", authorization: `Bearer ${BOOTSTRAP_KEY}` };
  const random = rng(5);
  const sample = (count: number) => Array.from({ length: count }, () => Math.floor(random() * userCount));
  const deepPage = Math.max(1, Math.floor(userCount / 100) - 1);
  const plans: Record<string, WrkPlan> = {
    "create user": {
      url: server.apiUrl,
      mode: "status",
      statuses: [200, 201],
      headers,
      requests: [
        {
          method: "POST",
          path: `${FACTS}/users`,
          template: true,
          body: JSON.stringify({ key: "new{n}", email: "new{n}@example.com", first_name: "New" }),
        },
      ],
    },
    "upsert user (PUT)": {
      url: server.apiUrl,
      mode: "status",
      statuses: [200, 201],
      headers,
      requests: sample(2000).map((k) => ({
        method: "PUT",
        path: `${FACTS}/users/u${k}`,
        body: JSON.stringify({
          email: `u${k}@example.org`,
          first_name: "Updated",
          attributes: { level: k % 7, department: "ops" },
        }),
      })),
    },
    "assign role": {
      url: server.apiUrl,
      mode: "status",
      statuses: [200, 201],
      headers,
      // tenant (k + 71) % 100 is never one the import used for user k, so every request creates an assignment
      requests: Array.from({ length: userCount }, (_, k) => ({
        method: "POST",
        path: `${FACTS}/role_assignments`,
        body: JSON.stringify({ user: `u${k}`, role: "viewer", tenant: `t${(k + 71) % TENANTS}` }),
      })),
    },
    "list users, page 1": {
      url: server.apiUrl,
      mode: "status",
      statuses: [200],
      headers,
      requests: [{ method: "GET", path: `${FACTS}/users?page=1&per_page=100` }],
    },
    [`list users, page ${deepPage}`]: {
      url: server.apiUrl,
      mode: "status",
      statuses: [200],
      headers,
      requests: [{ method: "GET", path: `${FACTS}/users?page=${deepPage}&per_page=100` }],
    },
  };
  // a deep page must really hold users
  const deep = await api.call("GET", `${FACTS}/users?page=${deepPage}&per_page=100`);
  const deepItems = Array.isArray(deep.json) ? deep.json : deep.json?.data;
  if (!Array.isArray(deepItems) || deepItems.length === 0)
    fail(`page ${deepPage} of the users is empty: ${deep.text.slice(0, 200)}`);

  const ops: Record<string, WrkResult> = {};
  const problems: string[] = [];
  await runWrk(plans["list users, page 1"] as WrkPlan, 4, settings.warmupSeconds);
  for (const [name, plan] of Object.entries(plans)) {
    const load = await runWrk(plan, sizes.opConcurrency, sizes.opSeconds);
    problems.push(...load.problems.map((problem) => `${dialect} ${name}: ${problem}`));
    ops[name] = load;
    log(`${name}: ${fmt(load.rps)} req/s, p50 ${ms(load.latency_us.p50)}, p99 ${ms(load.latency_us.p99)}`);
  }

  // ---- API log: more servers over the same database, one at a time while the first one idles, started with
  // GATEHOUSE_API_LOG=on and =off in the order on, off, off, on, and so on; each pair of them is a block, which gives
  // the throughput the log costs (the spread between processes alike included, which the interval shows). ----
  const apiLog: DialectResult["apiLog"] = {};
  const logged = ["upsert user (PUT)", "list users, page 1"];
  const slice = Math.max(1, Math.round(sizes.opSeconds / 2));
  for (const name of logged) {
    const blocks: Record<"on" | "off", WrkResult[]>[] = [];
    for (let serverIndex = 0; serverIndex < 2 * AB_BLOCKS; serverIndex++) {
      const mode = abServerMode(serverIndex);
      const abServer = await startServer(ctx, dataDir, dbUrl, mode);
      const plan = { ...(plans[name] as WrkPlan), url: abServer.apiUrl };
      await runWrk(plan, sizes.opConcurrency, 1);
      const block = (blocks[Math.floor(serverIndex / 2)] ??= { on: [], off: [] });
      for (let i = 0; i < 2; i++) {
        // a pause first: what the log queued in the slice before is written before this one begins
        await sleep(1000);
        const load = await runWrk(plan, sizes.opConcurrency, slice);
        problems.push(...load.problems.map((problem) => `${dialect} ${name} (API log ${mode}): ${problem}`));
        block[mode].push(load);
      }
      await abServer.proc.stop();
    }
    const all = (mode: "on" | "off") => combine(blocks.flatMap((block) => block[mode]));
    apiLog[name] = {
      off: all("off"),
      on: all("on"),
      overhead: meanInterval(blocks.map((block) => 1 - combine(block.on).rps / combine(block.off).rps)),
    };
    log(
      `${name}: API log off ${fmt(apiLog[name].off.rps)} req/s, on ${fmt(apiLog[name].on.rps)} req/s; ` +
        `throughput lost per block: ${withInterval(apiLog[name].overhead)}`,
    );
  }
  if (problems.length > 0) fail(`control plane answers under load:\n  ${problems.join("\n  ")}`);

  // ---- environment copy ----
  const { copyResources: resourceCount, copyActions: actionCount, copyRoles: roleCount } = sizes;
  await api.call("POST", "/v2/projects/default/envs", { key: "copy_src", name: "Copy source" });
  const actions = Array.from({ length: actionCount }, (_, action) => `act${action}`);
  const seedStart = Date.now();
  await pool(
    Array.from({ length: resourceCount }, (_, resourceIndex) => resourceIndex),
    4,
    (resourceIndex) =>
      api.call("POST", "/v2/schema/default/copy_src/resources", {
        key: `res${resourceIndex}`,
        name: `Resource ${resourceIndex}`,
        actions: Object.fromEntries(actions.map((action) => [action, {}])),
        roles: Object.fromEntries(
          Array.from({ length: roleCount }, (_, k) => [
            `role${k}`,
            { name: `Role ${k}`, permissions: actions },
          ]),
        ),
      }),
  );
  const seedSeconds = (Date.now() - seedStart) / 1000;
  log(
    `created ${resourceCount} resources (${actionCount} actions, ${roleCount} roles each) in ${seedSeconds.toFixed(1)} s`,
  );
  const copyStart = Date.now();
  let task = await api.call("POST", "/v2/projects/default/envs/copy_src/copy/async?wait=60", {
    target_env: { new: { key: "copy_dst", name: "Copy target" } },
  });
  while (task.json?.status === "processing") {
    task = await api.call(
      "GET",
      `/v2/projects/default/envs/copy_src/copy/async/${task.json.task_id}/result?wait=60`,
    );
  }
  const copySeconds = (Date.now() - copyStart) / 1000;
  if (task.json?.status !== "success") fail(`environment copy did not succeed: ${task.text.slice(0, 500)}`);
  // the copy must hold every resource with every role's permissions
  let resources = 0;
  let permissions = 0;
  for (let page = 1; ; page++) {
    const list = await api.call("GET", `/v2/schema/default/copy_dst/resources?page=${page}&per_page=100`);
    const items = (Array.isArray(list.json) ? list.json : list.json?.data) as {
      roles: Record<string, { permissions: string[] }>;
    }[];
    if (!items || items.length === 0) break;
    resources += items.length;
    for (const item of items)
      for (const role of Object.values(item.roles)) permissions += role.permissions.length;
    if (items.length < 100) break;
  }
  if (resources !== resourceCount || permissions !== resourceCount * roleCount * actionCount) {
    fail(
      `the copied environment holds ${resources} resources and ${permissions} role permissions; expected ${resourceCount} and ${resourceCount * roleCount * actionCount}`,
    );
  }
  log(
    `copied the environment in ${copySeconds.toFixed(1)} s (${resources} resources, ${permissions} role permissions checked)`,
  );
  await server.proc.stop();
  return {
    dialect,
    imports: { users, assignments },
    ops,
    apiLog,
    copy: {
      seed_seconds: seedSeconds,
      resources_per_s: resourceCount / seedSeconds,
      copy_seconds: copySeconds,
      resources,
      permissions,
    },
  };
}

export const controlPlaneScenario: Scenario<ControlPlaneData> = {
  name: "control-plane",
  description:
    "How fast are imports, writes and lists, and what does the API log cost? gatehouse serve on SQLite and " +
    "PostgreSQL: create/upsert user, assign role, list users (page 1 and a deep page), bulk import of 100k users and 1M role assignments, environment copy of " +
    "1,000 resources x 10 actions x 10 roles, and the API log's overhead.",
  async run(ctx: Context): Promise<ControlPlaneData> {
    const results: DialectResult[] = [];
    for (const dialect of settings.controlPlane.dialects) {
      if (dialect === "postgres") {
        const problem = await pgReachable(settings.pgUrl);
        if (problem) {
          ctx.note(`PostgreSQL NOT RUN: ${settings.pgUrl} is not reachable (${problem})`);
          continue;
        }
      }
      results.push(await runDialect(ctx, dialect));
      await sleep(500);
    }
    const sizes = settings.controlPlane;
    const names = [...new Set(results.flatMap((result) => Object.keys(result.ops)))];
    const columns = [
      "operation (c=8)",
      ...results.flatMap((result) => [`${result.dialect} req/s`, "p50", "p99"]),
    ];
    ctx.table({
      title: "Control plane operations (wrk, 8 connections, org admin key, every status checked)",
      columns,
      rows: names.map((op) => [
        op,
        ...results.flatMap((result) => {
          const load = result.ops[op];
          return [fmt(load?.rps), ms(load?.latency_us.p50), ms(load?.latency_us.p99)] as Cell[];
        }),
      ]),
      notes: [
        `${sizes.opSeconds} s per operation; API log on (the default); ${fmt(sizes.importUsers)} users and the imported assignments in the environment.`,
      ],
    });
    ctx.table({
      title: "Bulk import through the bulk endpoints (1,000 items a request, 2 requests in flight)",
      columns: ["import", ...results.flatMap((result) => [`${result.dialect} time`, "items/s"])],
      rows: (["users", "assignments"] as const).map((k) => [
        k === "users"
          ? `${fmt(sizes.importUsers)} users (PUT bulk/users)`
          : `${fmt(sizes.importAssignments)} role assignments (POST role_assignments/bulk)`,
        ...results.flatMap((result) => {
          const imported = result.imports[k];
          return [
            `${imported.seconds.toFixed(1)} s${imported.capped ? ` (stopped at ${fmt(imported.items)})` : ""}`,
            fmt(imported.per_s),
          ];
        }),
      ]),
      notes: results.some((result) => result.imports.assignments.capped)
        ? [
            `an import marked 'stopped' hit its ${IMPORT_BUDGET_S} s time budget (BENCH_IMPORT_BUDGET_S): the rate is measured over what it did.`,
          ]
        : [],
    });
    ctx.table({
      title: `Environment copy: ${fmt(sizes.copyResources)} resources x ${sizes.copyActions} actions x ${sizes.copyRoles} roles (every role holding every action)`,
      columns: ["step", ...results.map((result) => result.dialect)],
      rows: [
        [
          "create the resources (POST resources, 4 in flight)",
          ...results.map(
            (result) => `${result.copy.seed_seconds.toFixed(1)} s (${fmt(result.copy.resources_per_s)}/s)`,
          ),
        ],
        [
          "copy/async?wait to success",
          ...results.map((result) => `${result.copy.copy_seconds.toFixed(1)} s`),
        ],
      ],
    });
    ctx.table({
      title:
        "API log overhead (servers started with the API log on against servers with it off, in pairs; throughput lost: mean over the pairs, 95% interval)",
      columns: ["operation", "database", "off req/s", "on req/s", "throughput lost", "p50 off", "p50 on"],
      rows: results.flatMap((result) =>
        Object.entries(result.apiLog).map(([op, ab]) => [
          op,
          result.dialect,
          fmt(ab.off.rps),
          fmt(ab.on.rps),
          withInterval(ab.overhead),
          ms(ab.off.latency_us.p50),
          ms(ab.on.latency_us.p50),
        ]),
      ),
    });
    const brief = (load: WrkResult): LoadBrief => ({
      rps: Math.round(load.rps),
      latency_us: load.latency_us,
      requests: load.requests,
    });
    return {
      dialects: results.map((result) => ({
        dialect: result.dialect,
        imports: result.imports,
        ops: Object.fromEntries(Object.entries(result.ops).map(([op, load]) => [op, brief(load)])),
        api_log: Object.fromEntries(
          Object.entries(result.apiLog).map(([op, ab]) => [
            op,
            {
              off: brief(ab.off),
              on: brief(ab.on),
              overhead: ab.overhead.estimate,
              overhead_interval: [ab.overhead.low, ab.overhead.high] as [number, number],
            },
          ]),
        ),
        copy: result.copy,
      })),
    };
  },
  goals(data) {
    const overheads = (data?.dialects ?? []).flatMap((dialect) =>
      Object.entries(dialect.api_log).map(([op, ab]) => ({
        name: `${op}, ${dialect.dialect}`,
        interval: { estimate: ab.overhead, low: ab.overhead_interval[0], high: ab.overhead_interval[1] },
      })),
    );
    const worst = Math.max(...overheads.map((overhead) => overhead.interval.estimate));
    const byDialect = (dialect: string) => data?.dialects.find((d) => d.dialect === dialect);
    const importGoals = Object.entries(GOALS).map(([dialect, goal]) => {
      const imported = byDialect(dialect)?.imports.assignments;
      // Judged by rate, so that a small run judges too: 1M in `importS` seconds is 1M / importS items a second.
      const needed = IMPORT_GOAL_ITEMS / goal.importS;
      return judge(
        `1M role assignments imported in at most ${goal.importS} s on ${dialect} (at least ${fmt(needed)} items/s, POST role_assignments/bulk)`,
        imported === undefined ? undefined : !imported.capped && imported.per_s >= needed,
        imported === undefined
          ? "-"
          : `${fmt(imported.items)} in ${imported.seconds.toFixed(1)} s (${fmt(imported.per_s)}/s; 1M at this rate: ${(IMPORT_GOAL_ITEMS / imported.per_s).toFixed(1)} s)${imported.capped ? ", stopped at the budget" : ""}`,
      );
    });
    const writeGoals = Object.entries(GOALS).map(([dialect, goal]) => {
      const ops = byDialect(dialect)?.ops;
      const rates = SINGLE_WRITES.map((op) => ({ op, rps: ops?.[op]?.rps }));
      const measured = rates.every((rate) => rate.rps !== undefined);
      return judge(
        `single writes (${SINGLE_WRITES.join(", ")}) at c=8 at least ${fmt(goal.writesPerS)}/s on ${dialect}`,
        measured ? rates.every((rate) => (rate.rps ?? 0) >= goal.writesPerS) : undefined,
        rates.map((rate) => `${rate.op} ${fmt(rate.rps)}/s`).join(", "),
      );
    });
    return [
      ...importGoals,
      ...writeGoals,
      judge(
        "API-log overhead under 10% (throughput lost with the log on; the mean over the A/B's blocks)",
        overheads.length === 0 ? undefined : worst < 0.1,
        overheads.map((overhead) => `${withInterval(overhead.interval)} (${overhead.name})`).join("; ") ||
          signedPercent(worst),
      ),
    ];
  },
};
