import path from "node:path";
import { sql } from "kysely";
import { openStore, type Store } from "../../src/db/store.ts";
import { settings } from "../lib/config.ts";
import { Api } from "../lib/http.ts";
import { freshPgSchema, pgReachable } from "../lib/pg.ts";
import { BOOTSTRAP_KEY, startGatehouse } from "../lib/procs.ts";
import { fmt } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { rng } from "../lib/pdp-dataset.ts";
import { median } from "../lib/stats.ts";

const PER_PAGE = 100;
const GOAL_RATIO = 2;

/** One size: an environment of `users` users; its deep page is page 1,000, or its last full page when smaller. */
interface Size {
  label: string;
  envKey: string;
  users: number;
  deepPage: number;
}

interface Cell {
  p50_ms: number;
  p10_ms: number;
  p90_ms: number;
  samples: number;
}

interface DialectResult {
  dialect: string;
  seed_seconds: number;
  /** `${size label} ${kind}` → latency. */
  cells: Record<string, Cell>;
  /** kind → p50 large / p50 small, with a 95% bootstrap interval. */
  ratios: Record<string, { ratio: number; low: number; high: number }>;
}

export interface ListsData {
  small_users: number;
  large_users: number;
  dialects: DialectResult[];
}

const KINDS = ["page 1", "deep page"] as const;
const AFTER_WRITE = "deep page after a write";

/** A user key that sorts like its number, so the expected first key of any page is known. */
const userKey = (i: number) => `user-${String(i).padStart(8, "0")}`;

/**
 * Writes `count` users straight into the environment in one statement per 100k (a generated series), with
 * created_at one second apart in key order: the seeding is not what is measured, so it skips the API.
 */
export async function seedUsers(
  store: Store,
  envKey: string,
  count: number,
  idPrefix: string,
): Promise<void> {
  const env = await store.db
    .selectFrom("environments")
    .select(["id", "organization_id", "project_id"])
    .where("key", "=", envKey)
    .executeTakeFirstOrThrow();
  const postgres = store.dialect === "postgres";
  for (let from = 0; from < count; from += 100_000) {
    const to = Math.min(count, from + 100_000) - 1;
    const keyExpr = postgres ? sql`'user-' || lpad(i::text, 8, '0')` : sql`'user-' || printf('%08d', i)`;
    const idExpr = postgres
      ? sql`${idPrefix} || lpad(i::text, 12, '0')`
      : sql`${idPrefix} || printf('%012d', i)`;
    const atExpr = postgres
      ? sql`to_char(to_timestamp(1700000000 + i) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '.000+00:00'`
      : sql`strftime('%Y-%m-%dT%H:%M:%S', 1700000000 + i, 'unixepoch') || '.000+00:00'`;
    const series = postgres
      ? sql`generate_series(${from}::int, ${to}::int) as s(i)`
      : sql`(with recursive s(i) as (select ${from} union all select i + 1 from s where i < ${to}) select i from s) s`;
    await sql`insert into users (id, organization_id, project_id, environment_id, key, email, first_name,
        last_name, attributes, created_at, updated_at)
      select ${idExpr}, ${env.organization_id}, ${env.project_id}, ${env.id}, ${keyExpr}, ${keyExpr} || '@example.com',
        'First', 'Last', '{"plan":"pro"}', ${atExpr}, ${atExpr}
      from ${series}`.execute(store.db);
  }
  // Fresh statistics and visibility map, as autovacuum would leave them (index-only scans need the latter).
  if (postgres) await sql`vacuum analyze users`.execute(store.db);
  else await sql`analyze`.execute(store.db);
}

/** One request, checked: 200, a full page, the right total and the right first and last users. */
async function timedPage(api: Api, size: Size, page: number): Promise<number> {
  const url = `/v2/facts/default/${size.envKey}/users?page=${page}&per_page=${PER_PAGE}`;
  const started = process.hrtime.bigint();
  const res = await api.call("GET", url);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  const keys = (res.json?.data ?? []).map((u: { key: string }) => u.key);
  const first = (page - 1) * PER_PAGE;
  if (
    res.status !== 200 ||
    keys.length !== PER_PAGE ||
    res.json.total_count !== size.users ||
    keys[0] !== userKey(first) ||
    keys[PER_PAGE - 1] !== userKey(first + PER_PAGE - 1)
  ) {
    fail(
      `${url}: ${res.status}, ${keys.length} rows, total_count ${res.json?.total_count} (want ${size.users}), ` +
        `first ${keys[0]} (want ${userKey(first)})`,
    );
  }
  return elapsed;
}

const cellOf = (xs: number[]): Cell => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { p50_ms: median(xs), p10_ms: at(0.1), p90_ms: at(0.9), samples: xs.length };
};

/** The ratio of medians with a 95% interval from a seeded bootstrap of both samples. */
function ratioInterval(large: number[], small: number[]): { ratio: number; low: number; high: number } {
  const random = rng(7);
  const draw = (xs: number[]) => xs.map(() => xs[Math.floor(random() * xs.length)] as number);
  const ratios = Array.from({ length: 1000 }, () => median(draw(large)) / median(draw(small))).sort(
    (a, b) => a - b,
  );
  return { ratio: median(large) / median(small), low: ratios[25] as number, high: ratios[974] as number };
}

async function runDialect(
  ctx: Context,
  dialect: string,
  sizes: Size[],
  rounds: number,
): Promise<DialectResult> {
  const log = (message: string) => ctx.log(`${dialect}: ${message}`);
  const dataDir = ctx.res.tempDir(`lists-${dialect}`);
  const dbUrl = dialect === "postgres" ? (await freshPgSchema(ctx.res, settings.pgUrl)).url : undefined;
  const server = await startGatehouse(ctx.res, {
    dataDir,
    ...(dbUrl && { databaseUrl: dbUrl }),
    pdp: false,
    env: { GATEHOUSE_API_LOG: "off" },
  });
  const api = new Api(server.apiUrl, BOOTSTRAP_KEY);
  for (const size of sizes) {
    if (size.envKey !== "production") {
      await api.call("POST", "/v2/projects/default/envs", { key: size.envKey, name: size.envKey });
    }
  }
  const store = dbUrl
    ? openStore({ databaseUrl: dbUrl })
    : openStore({ sqliteFile: path.join(dataDir, "gatehouse.db") });
  const seedStarted = Date.now();
  try {
    for (const size of sizes) {
      await seedUsers(store, size.envKey, size.users, `0000000${sizes.indexOf(size)}-0000-7000-8000-`);
      log(`seeded ${fmt(size.users)} users into ${size.envKey}`);
    }
  } finally {
    await store.close();
  }
  const seed_seconds = (Date.now() - seedStarted) / 1000;

  // Warm-up: each request a few times, unmeasured.
  for (let i = 0; i < 3; i++) {
    for (const size of sizes) for (const page of [1, size.deepPage]) await timedPage(api, size, page);
  }
  const samples: Record<string, number[]> = {};
  const key = (size: Size, kind: string) => `${size.label} ${kind}`;
  for (let round = 0; round < rounds; round++) {
    // A B A B, starting with the other size every second round.
    const order = round % 2 === 0 ? sizes : [...sizes].reverse();
    for (const kind of KINDS) {
      for (const size of order) {
        const ms = await timedPage(api, size, kind === "page 1" ? 1 : size.deepPage);
        (samples[key(size, kind)] ??= []).push(ms);
      }
    }
  }
  // Not judged, shown: a deep page right after a write to the environment's lists (a tenant created and deleted,
  // so the users stay as they are) walks the index again to find its anchors.
  for (let round = 0; round < Math.ceil(rounds / 5); round++) {
    for (const size of sizes) {
      await api.call("POST", `/v2/facts/default/${size.envKey}/tenants`, { key: "bench-write", name: "w" });
      await api.call("DELETE", `/v2/facts/default/${size.envKey}/tenants/bench-write`);
      (samples[key(size, AFTER_WRITE)] ??= []).push(await timedPage(api, size, size.deepPage));
    }
  }
  const cells = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, cellOf(xs)]));
  const [small, large] = sizes as [Size, Size];
  const ratios = Object.fromEntries(
    KINDS.map((kind) => [
      kind,
      ratioInterval(samples[key(large, kind)] ?? [], samples[key(small, kind)] ?? []),
    ]),
  );
  return { dialect, seed_seconds, cells, ratios };
}

export const listsScenario: Scenario<ListsData> = {
  name: "lists",
  description:
    "Does a page of users cost the same at any size and depth? gatehouse serve on SQLite and PostgreSQL with two " +
    "environments (1k and 1M users, written straight into the database): list users page 1 and a deep page " +
    "(page 1,000 at 1M; the last full page, 10, at 1k), per_page 100, the sizes interleaved (A B A B), every " +
    "answer checked (200, 100 rows, total_count, the first and last user of the page).",
  async run(ctx: Context): Promise<ListsData> {
    const { smallUsers, largeUsers, rounds } = settings.lists;
    const sizes: Size[] = [
      { label: "1k", envKey: "small", users: smallUsers, deepPage: Math.floor(smallUsers / PER_PAGE) },
      {
        label: "1M",
        envKey: "production",
        users: largeUsers,
        deepPage: Math.min(1000, largeUsers / PER_PAGE),
      },
    ];
    const dialects: DialectResult[] = [];
    for (const dialect of settings.controlPlane.dialects) {
      if (dialect === "postgres") {
        const unreachable = await pgReachable(settings.pgUrl);
        if (unreachable) {
          ctx.note(`PostgreSQL skipped: ${unreachable}`);
          continue;
        }
      }
      dialects.push(await runDialect(ctx, dialect, sizes, rounds));
    }
    const ms = (c: Cell | undefined) =>
      c ? `${c.p50_ms.toFixed(1)} (${c.p10_ms.toFixed(1)}-${c.p90_ms.toFixed(1)})` : "-";
    ctx.table({
      title: `List users, per_page ${PER_PAGE}: p50 ms (p10-p90), ${rounds} interleaved rounds`,
      columns: [
        "database",
        "request",
        `${fmt(smallUsers)} users`,
        `${fmt(largeUsers)} users`,
        "ratio (95% interval)",
        `goal ≤ ${GOAL_RATIO}`,
      ],
      rows: dialects.flatMap((d) => [
        ...KINDS.map((kind) => {
          const r = d.ratios[kind];
          return [
            d.dialect,
            kind === "page 1" ? "page 1" : `page ${sizes[1]?.deepPage} (1M) / ${sizes[0]?.deepPage} (1k)`,
            ms(d.cells[`${sizes[0]?.label} ${kind}`]),
            ms(d.cells[`${sizes[1]?.label} ${kind}`]),
            r ? `${r.ratio.toFixed(2)} (${r.low.toFixed(2)}-${r.high.toFixed(2)})` : "-",
            r && r.ratio <= GOAL_RATIO ? "met" : "missed",
          ];
        }),
        [
          d.dialect,
          `${AFTER_WRITE} (not judged)`,
          ms(d.cells[`${sizes[0]?.label} ${AFTER_WRITE}`]),
          ms(d.cells[`${sizes[1]?.label} ${AFTER_WRITE}`]),
          "-",
          "-",
        ],
      ]),
      notes: [
        "Latency from the client, one request at a time (no concurrency), API log off.",
        "A deep page seeks from anchors kept per process while the environment's lists are unchanged; the first " +
          "deep page after an insert or delete walks the index to find them again (the row after a write).",
        "The deep page of the small environment is its last full page: page 1,000 does not exist at 1k users.",
      ],
    });
    return { small_users: smallUsers, large_users: largeUsers, dialects };
  },
  goals(data) {
    const worst = (dialect: string) => {
      const d = data?.dialects.find((x) => x.dialect === dialect);
      if (!d || (data?.large_users ?? 0) < 1_000_000) return undefined;
      return Math.max(...KINDS.map((k) => d.ratios[k]?.ratio ?? Infinity));
    };
    return ["sqlite", "postgres"].map((dialect) => {
      const ratio = worst(dialect);
      return judge(
        `List users page 1 and page 1,000 (per_page 100), ${dialect}: p50 at 1M users ≤ ${GOAL_RATIO}x p50 at 1k`,
        ratio === undefined ? undefined : ratio <= GOAL_RATIO,
        `worst ratio ${ratio?.toFixed(2)}`,
      );
    });
  },
};
