// Listing walks and filter plans (issue 40), in process on the engine, as the PDP's /list/* and /plan/resources
// compute them: documents each in a folder (100 a folder), one tuple each, users editing folders.
import { performance } from "node:perf_hooks";
import { createEngine, type Engine, type ListCursor } from "../../src/pdp/engine/index.ts";
import { fmt } from "../lib/report.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";

const PER_FOLDER = 100;
const TENANTS = 10;
const PAGE = 100;
const SMALL = 10_000;
const LARGE = Number(process.env["BENCH_LISTINGS_DOCUMENTS"] ?? 1_000_000);
const RUNS = 200;

/** `documents` documents and tuples; u<n> edits one folder, "reader" 10 folders (1,000 documents), "wide" 100
 * folders of t0 (10,000), "widest" 1,000 folders (100,000, when there are that many), "member" a tenant role. */
function build(documents: number): Engine {
  const folders = documents / PER_FOLDER;
  const users = Math.min(20_000, folders * 2);
  const tenantOf = (folder: number) => `t${folder % TENANTS}`;
  const editorRole = {
    permissions: ["read", "write"],
    granted_to: {
      users_with_role: [{ role: "editor", on_resource: "folder", linked_by_relation: "parent" }],
    },
  };
  const engine = createEngine({
    resources: [
      { key: "folder", actions: ["read"], roles: { editor: { permissions: ["read"] } } },
      {
        key: "document",
        actions: ["read", "write"],
        relations: { parent: "folder" },
        roles: { editor: editorRole },
      },
    ],
    roles: [{ key: "viewer", permissions: ["document:read"] }],
    tenants: Array.from({ length: TENANTS }, (_, i) => ({ key: `t${i}` })),
    users: Array.from({ length: users }, (_, i) => ({ key: `u${i}` })),
  });
  for (let start = 0; start < documents; start += 100_000) {
    const count = Math.min(100_000, documents - start);
    engine.loadPage({
      relationship_tuples: Array.from({ length: count }, (_, i) => {
        const folder = Math.floor((start + i) / PER_FOLDER);
        return {
          subject: `folder:f${folder}`,
          relation: "parent",
          object: `document:d${start + i}`,
          tenant: tenantOf(folder),
        };
      }),
    });
  }
  const edits = (user: string, count: number) =>
    Array.from({ length: Math.min(count, folders / TENANTS) }, (_, i) => ({
      user,
      role: "editor",
      tenant: "t0",
      resource_instance: `folder:f${i * TENANTS}`,
    }));
  engine.loadPage({
    users: ["reader", "wide", "widest", "member"].map((key) => ({ key })),
    role_assignments: [
      ...Array.from({ length: users }, (_, u) => {
        const folder = (u * 7919) % folders;
        return {
          user: `u${u}`,
          role: "editor",
          tenant: tenantOf(folder),
          resource_instance: `folder:f${folder}`,
        };
      }),
      ...edits("reader", 10),
      ...edits("wide", 100),
      ...edits("widest", 1000),
      { user: "member", role: "viewer", tenant: "t3" },
    ],
  });
  engine.markRevision(1);
  return engine;
}

/** p50 of `run` in ms (after 20 warm-up runs). */
function p50(run: () => void, runs = RUNS): number {
  const times: number[] = [];
  for (let i = 0; i < runs + 20; i++) {
    const start = performance.now();
    run();
    if (i >= 20) times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)] as number;
}

/** A whole walk: its item count and its time in ms. */
function walk(engine: Engine, user: string, action = "write"): { items: number; ms: number } {
  const start = performance.now();
  let items = 0;
  let cursor: ListCursor | undefined;
  do {
    const page = engine.listResources(
      { user: { key: user }, action, type: "document" },
      { size: PAGE, ...(cursor && { cursor }) },
    );
    if (page.gone) fail("a walk's revision went away with no writes");
    items += page.items.length;
    cursor = page.next;
  } while (cursor !== undefined);
  return { items, ms: performance.now() - start };
}

function firstPage(engine: Engine, user: string, action: string): () => void {
  return () => {
    const page = engine.listResources({ user: { key: user }, action, type: "document" }, { size: PAGE });
    if (page.gone || page.items.length !== PAGE) fail(`${user}: a first page of ${PAGE} expected`);
  };
}

export interface ListingsData {
  documents: number;
  page_ms: Record<string, { small: number; large: number; ratio: number }>;
  walk: {
    small: { items: number; ms: number };
    large: { items: number; ms: number };
    per_item_ratio: number;
  };
  plan_ms: { wide: number; one_folder: number; check: number };
}

export const listingsScenario: Scenario<ListingsData> = {
  name: "listings",
  description:
    `Listing walks and filter plans in process: a page of ${PAGE} documents at ${fmt(SMALL)} and ${fmt(LARGE)} ` +
    "documents (one tuple each), for a user deriving 1,000 documents through folders and for a tenant role; a " +
    "whole walk of 10,000 and of 100,000 results (time per result); a plan for a user with 10,000 derived " +
    "documents among all of them, against a plan with 100 and a single check in the same run.",
  async run(ctx: Context): Promise<ListingsData> {
    ctx.log(`building ${fmt(SMALL)} and ${fmt(LARGE)} documents`);
    const small = build(SMALL);
    const large = build(LARGE);
    const page_ms: ListingsData["page_ms"] = {};
    for (const [label, user, action] of [
      ["derived (1,000 documents)", "reader", "write"],
      ["tenant role", "member", "read"],
    ] as const) {
      const s = p50(firstPage(small, user, action));
      const l = p50(firstPage(large, user, action));
      page_ms[label] = { small: s, large: l, ratio: l / s };
    }
    const wide = walk(large, "wide");
    const widest = walk(large, "widest");
    if (wide.items !== 10_000) fail(`wide: ${wide.items} documents walked, 10,000 expected`);
    const walkData = {
      small: wide,
      large: widest,
      per_item_ratio: widest.ms / widest.items / (wide.ms / wide.items),
    };
    const plan = (user: string) => () =>
      large.planResources({ user: { key: user }, action: "write", resource: { type: "document" } });
    const plan_ms = {
      wide: p50(plan("wide")),
      one_folder: p50(plan("u2")),
      check: p50(() =>
        large.check({ user: { key: "wide" }, action: "write", resource: { type: "document", key: "d0" } }),
      ),
    };
    ctx.table({
      title: `Listings: a page of ${PAGE}, p50 ms`,
      columns: ["user", `${fmt(SMALL)} documents`, `${fmt(LARGE)} documents`, "ratio", "goal ≤ 2"],
      rows: Object.entries(page_ms).map(([label, c]) => [
        label,
        c.small.toFixed(3),
        c.large.toFixed(3),
        c.ratio.toFixed(2),
        c.ratio <= 2 ? "met" : "missed",
      ]),
    });
    ctx.table({
      title: "A whole walk, pages of 100",
      columns: ["results", "ms", "µs per result"],
      rows: [wide, widest].map((w) => [fmt(w.items), w.ms.toFixed(0), ((w.ms * 1000) / w.items).toFixed(1)]),
    });
    ctx.table({
      title: `Plans among ${fmt(LARGE)} documents, p50 ms`,
      columns: ["10,000 keys", "100 keys", "one check", "goal: 10,000 keys under 2 ms"],
      rows: [
        [
          plan_ms.wide.toFixed(3),
          plan_ms.one_folder.toFixed(3),
          plan_ms.check.toFixed(4),
          plan_ms.wide < 2 ? "met" : "missed",
        ],
      ],
    });
    return { documents: LARGE, page_ms, walk: walkData, plan_ms };
  },
  goals(data) {
    const pages = data === undefined ? undefined : Object.values(data.page_ms);
    const worst = pages === undefined ? undefined : Math.max(...pages.map((p) => p.ratio));
    return [
      judge(
        "a page of 100 at 1M tuples costs at most 2x a page at 10k",
        worst === undefined ? undefined : worst <= 2,
        `${worst?.toFixed(2)}x`,
      ),
      judge(
        "a full walk of 100,000 results is linear (time per result at most 1.5x that of 10,000)",
        data === undefined ? undefined : data.walk.per_item_ratio <= 1.5,
        `${data?.walk.per_item_ratio.toFixed(2)}x per result`,
      ),
      judge(
        "a plan for a user with 10,000 accessible instances among 1M tuples: p50 under 2 ms",
        data === undefined ? undefined : data.plan_ms.wide < 2,
        `${data?.plan_ms.wide.toFixed(2)} ms (${((data?.plan_ms.wide ?? 0) / (data?.plan_ms.check ?? 1)).toFixed(0)}x a check)`,
      ),
    ];
  },
};
