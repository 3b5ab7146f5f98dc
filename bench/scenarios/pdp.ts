import { settings } from "../lib/config.ts";
import { cerbosBinary, cerbosPolicies, startCerbos } from "../lib/cerbos.ts";
import { Api, pool } from "../lib/http.ts";
import { TENANT_ROLES, type Check, type RbacCheck } from "../lib/pdp-dataset.ts";
import { allowedPlan, sampler, seededPdp } from "../lib/pdp-setup.ts";
import { freePort, waitReady } from "../lib/procs.ts";
import { fmt, ms, ratio } from "../lib/report.ts";
import { mean } from "../lib/stats.ts";
import { fail, judge, type Context, type Scenario } from "../lib/scenario.ts";
import { runWorker } from "../lib/worker.ts";
import { runWrk, type WrkPlan, type WrkResult } from "../lib/wrk.ts";

type Target = "bare" | "bare-bulk" | "rbac" | "cerbos" | "rebac1" | "rebac3" | "abac" | "bulk";

const LABEL: Record<Target, string> = {
  bare: "bare node:http (/allowed bodies)",
  "bare-bulk": "bare node:http (bulk bodies)",
  rbac: "RBAC",
  cerbos: "Cerbos RBAC",
  rebac1: "ReBAC depth 1",
  rebac3: "ReBAC depth 3",
  abac: "ABAC",
  bulk: "/allowed/bulk x100 (RBAC)",
};

const cerbosBody = (check: RbacCheck, i: number) =>
  JSON.stringify({
    requestId: "",
    principal: { id: check.body.user.key, roles: ["user"], attr: { tenant_roles: check.tenantRoles } },
    resources: [
      {
        actions: [check.body.action],
        resource: { kind: "document", id: `c${i + 1}`, attr: { tenant: check.body.resource.tenant } },
      },
    ],
  });

/** One load's figures as the results file keeps them. */
export interface LoadSummary {
  rps: number;
  decisions_per_s: number;
  requests: number;
  seconds: number;
  latency_us: WrkResult["latency_us"];
  checks: WrkResult["checks"];
}

export interface PdpData {
  seed_seconds: number;
  cerbos: { version: string } | { missing: string };
  /** By target, then by concurrency. */
  results: Partial<Record<Target, Record<number, LoadSummary>>>;
  /** The bulk bodies' checks decided by the engine in process on the same data: before and after the loads. */
  engine_bulk_decisions_per_s: number[];
  dataset: Record<
    "users" | "tenants" | "tenant_assignments" | "instance_assignments" | "tuples" | "checks_per_kind",
    number
  >;
}

export const pdpScenario: Scenario<PdpData> = {
  name: "pdp",
  description:
    "How fast does the PDP answer over HTTP, against the HTTP ceiling and Cerbos? gatehouse serve's PDP port at concurrency 1, 8 and 64: RBAC (10,000 users in 100 tenants), " +
    "ReBAC depth 1 and 3, ABAC, /allowed/bulk with 100 checks; beside a bare node:http server and Cerbos.",
  async run(ctx: Context): Promise<PdpData> {
    const setup = await seededPdp(ctx);
    const { dataset, envKey } = setup;
    const pdpUrl = setup.server.pdpUrl as string;
    const pdp = new Api(pdpUrl, envKey);

    // The bare baseline and the peer.
    const barePort = await freePort();
    const bareProc = ctx.res.spawn("baseline", process.execPath, [
      "--import",
      "tsx",
      "bench/lib/baseline-server.ts",
      String(barePort),
    ]);
    const bareUrl = `http://127.0.0.1:${barePort}`;
    await waitReady(bareProc, `${bareUrl}/`);

    const bin = cerbosBinary();
    let cerbosUrl: string | undefined;
    let cerbosVersion: string | undefined;
    let cerbosMissing: string | undefined;
    if ("missing" in bin) {
      cerbosMissing = bin.missing;
      ctx.note(`CERBOS NOT RUN: ${bin.missing}`);
    } else {
      try {
        const cerbos = await startCerbos(
          ctx.res,
          bin.path,
          bin.version,
          cerbosPolicies(TENANT_ROLES, "document"),
        );
        cerbosUrl = cerbos.url;
        cerbosVersion = cerbos.version;
      } catch (caught) {
        cerbosMissing = `Cerbos did not start: ${String(caught).slice(0, 500)}`;
        ctx.note(`CERBOS NOT RUN: ${cerbosMissing}`);
      }
    }
    if (cerbosUrl) {
      const wrong: string[] = [];
      await pool(dataset.checks.rbac, 8, async (check, i) => {
        const res = await fetch(`${cerbosUrl}/api/check/resources`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: cerbosBody(check, i),
        });
        const text = await res.text();
        const effect = JSON.parse(text)?.results?.[0]?.actions?.[check.body.action];
        if ((effect === "EFFECT_ALLOW") !== check.allow) wrong.push(`${cerbosBody(check, i)} -> ${text}`);
      });
      if (wrong.length > 0) fail(`Cerbos: ${wrong.length} answers differ from ours, e.g. ${wrong[0]}`);
      ctx.log(`Cerbos ${cerbosVersion}: ${dataset.checks.rbac.length} RBAC checks verified`);
    }

    const bulkPlan = (url: string, mode: "bulk" | "none"): WrkPlan => ({
      url,
      mode,
      headers: { "content-type": "application/json", authorization: `Bearer ${envKey}` },
      requests: dataset.bulk.map((bulk) => ({
        method: "POST",
        path: "/allowed/bulk",
        body: JSON.stringify(bulk.checks),
        expect: bulk.pattern,
      })),
    });
    const single = (url: string, checks: Check[], mode: "pdp" | "none", kind?: string) =>
      allowedPlan(url, envKey, checks, mode, kind);
    const plans: Partial<Record<Target, WrkPlan>> = {
      bare: single(bareUrl, dataset.checks.rbac, "none"),
      rbac: single(pdpUrl, dataset.checks.rbac, "pdp", "rbac"),
      rebac1: single(pdpUrl, dataset.checks.rebac1, "pdp", "rebac"),
      rebac3: single(pdpUrl, dataset.checks.rebac3, "pdp", "rebac"),
      abac: single(pdpUrl, dataset.checks.abac, "pdp", "abac"),
      "bare-bulk": bulkPlan(bareUrl, "none"),
      bulk: bulkPlan(pdpUrl, "bulk"),
    };
    if (cerbosUrl) {
      plans.cerbos = {
        url: cerbosUrl,
        mode: "cerbos",
        headers: { "content-type": "application/json" },
        requests: dataset.checks.rbac.map((check, i) => ({
          method: "POST",
          path: "/api/check/resources",
          body: cerbosBody(check, i),
          expect: check.allow ? "1" : "0",
        })),
      };
    }
    const samplers: Partial<Record<Target, (signal: AbortSignal) => Promise<void>>> = {
      rbac: sampler(pdp, dataset.checks.rbac),
      rebac1: sampler(pdp, dataset.checks.rebac1),
      rebac3: sampler(pdp, dataset.checks.rebac3),
      abac: sampler(pdp, dataset.checks.abac),
    };
    const engineBulk = async () => {
      const result = await runWorker(
        [],
        "bench/lib/engine-bulk-worker.ts",
        [],
        JSON.stringify({
          apiUrl: setup.server.apiUrl,
          envKey,
          snapshotPath: "/v2/pdp-sync/default/production/snapshot",
          bulk: dataset.bulk,
          seconds: settings.loadSeconds,
        }),
      );
      const rate = result["decisions_per_s"] as number;
      ctx.log(`the bulk bodies' checks in process (engine only): ${fmt(rate)} decisions/s`);
      return rate;
    };
    const engineBulkRates = [await engineBulk()];
    const order: Target[] = ["bare", "rbac", "cerbos", "rebac1", "rebac3", "abac", "bare-bulk", "bulk"];
    const results: Partial<Record<Target, Record<number, WrkResult>>> = {};
    const problems: string[] = [];
    const warmed = new Set<string>();
    for (const concurrency of settings.concurrencies) {
      for (const target of order) {
        const plan = plans[target];
        if (!plan) continue;
        if (!warmed.has(target)) {
          warmed.add(target);
          const warm = await runWrk(plan, 16, settings.warmupSeconds);
          problems.push(...warm.problems.map((problem) => `${LABEL[target]} warm-up: ${problem}`));
        }
        const load = await runWrk(plan, concurrency, settings.loadSeconds, samplers[target]);
        problems.push(...load.problems.map((problem) => `${LABEL[target]} c=${concurrency}: ${problem}`));
        (results[target] ??= {})[concurrency] = load;
        ctx.log(
          `${LABEL[target]} c=${concurrency}: ${fmt(load.rps)} req/s, ${fmt(load.decisions_per_s)} decisions/s, p50 ${ms(load.latency_us.p50)}, p99 ${ms(load.latency_us.p99)}`,
        );
      }
    }

    if (problems.length > 0) fail(`wrong or failed answers under load:\n  ${problems.join("\n  ")}`);
    engineBulkRates.push(await engineBulk());

    const rows = [];
    for (const target of [
      "rbac",
      "rebac1",
      "rebac3",
      "abac",
      "bulk",
      "cerbos",
      "bare",
      "bare-bulk",
    ] as Target[]) {
      for (const concurrency of settings.concurrencies) {
        const load = results[target]?.[concurrency];
        if (!load) continue;
        const bare =
          results[target === "bulk" || target === "bare-bulk" ? "bare-bulk" : "bare"]?.[concurrency];
        rows.push([
          LABEL[target],
          concurrency,
          fmt(load.rps),
          fmt(load.decisions_per_s),
          ms(load.latency_us.p50),
          ms(load.latency_us.p95),
          ms(load.latency_us.p99),
          ratio(load.rps, bare?.rps),
          ratio(load.latency_us.p99, bare?.latency_us.p99),
        ]);
      }
    }
    ctx.table({
      title: "PDP over HTTP (wrk, 1 thread; server and load generator are separate processes)",
      columns: [
        "scenario",
        "conc",
        "req/s",
        "decisions/s",
        "p50",
        "p95",
        "p99",
        "req/s vs bare",
        "p99 vs bare",
      ],
      rows,
      notes: [
        `${settings.loadSeconds} s per point after a ${settings.warmupSeconds} s warm-up per target; every answer checked (see docs/benchmarks.md).`,
      ],
    });
    if (cerbosUrl) {
      ctx.table({
        title: `RBAC: Gatehouse vs Cerbos ${cerbosVersion} (same checks, same concurrency)`,
        columns: [
          "conc",
          "gatehouse req/s",
          "p50",
          "p99",
          "cerbos req/s",
          "p50",
          "p99",
          "throughput ratio",
          "bare req/s",
        ],
        rows: settings.concurrencies.map((concurrency) => {
          const ours = results.rbac?.[concurrency];
          const theirs = results.cerbos?.[concurrency];
          return [
            concurrency,
            fmt(ours?.rps),
            ms(ours?.latency_us.p50),
            ms(ours?.latency_us.p99),
            fmt(theirs?.rps),
            ms(theirs?.latency_us.p50),
            ms(theirs?.latency_us.p99),
            ratio(ours?.rps, theirs?.rps),
            fmt(results.bare?.[concurrency]?.rps),
          ];
        }),
        notes: [
          "Cerbos keeps no facts: each request carries the user's roles per tenant (principal attribute), and derived roles pick the resource tenant's.",
        ],
      });
    } else {
      ctx.table({
        title: "RBAC: Gatehouse vs Cerbos",
        columns: ["status"],
        rows: [[`Cerbos was not run: ${cerbosMissing}`]],
      });
    }
    const engineRate = mean(engineBulkRates);
    ctx.table({
      title: "/allowed/bulk (100 RBAC checks a request) against the engine in process, same data and checks",
      columns: [
        "conc",
        "bulk decisions/s",
        "engine decisions/s",
        "ratio",
        "bulk p99",
        "single p99",
        "p99 ratio",
      ],
      rows: settings.concurrencies.map((concurrency) => {
        const bulk = results.bulk?.[concurrency];
        const single = results.rbac?.[concurrency];
        return [
          concurrency,
          fmt(bulk?.decisions_per_s),
          fmt(engineRate),
          ratio(bulk?.decisions_per_s, engineRate),
          ms(bulk?.latency_us.p99),
          ms(single?.latency_us.p99),
          ratio(bulk?.latency_us.p99, single?.latency_us.p99),
        ];
      }),
      notes: [
        `engine: the same bodies' checks decided in a fresh process built from the PDP's snapshot, once before and once after the loads (${engineBulkRates.map((rate) => fmt(rate)).join(" and ")} decisions/s); every answer checked.`,
      ],
    });
    const summary = (load: WrkResult): LoadSummary => ({
      rps: Math.round(load.rps),
      decisions_per_s: Math.round(load.decisions_per_s),
      requests: load.requests,
      seconds: load.seconds,
      latency_us: load.latency_us,
      checks: load.checks,
    });
    return {
      seed_seconds: setup.seedSeconds,
      engine_bulk_decisions_per_s: engineBulkRates.map(Math.round),
      cerbos: cerbosUrl && cerbosVersion ? { version: cerbosVersion } : { missing: cerbosMissing ?? "" },
      results: Object.fromEntries(
        Object.entries(results).map(([target, byConcurrency]) => [
          target,
          Object.fromEntries(
            Object.entries(byConcurrency).map(([concurrency, load]) => [concurrency, summary(load)]),
          ),
        ]),
      ),
      dataset: {
        users: dataset.users.length,
        tenants: dataset.tenants.length,
        tenant_assignments: dataset.tenantAssignments.length,
        instance_assignments: dataset.instanceAssignments.length,
        tuples: dataset.tuples.length,
        checks_per_kind: settings.pdp.checks,
      },
    };
  },
  goals(data) {
    const peak = (target: Target) => {
      const byConcurrency = Object.entries(data?.results[target] ?? {});
      if (byConcurrency.length === 0) return undefined;
      const [concurrency, load] = byConcurrency.reduce((best, next) =>
        next[1].rps > best[1].rps ? next : best,
      );
      return { concurrency, rps: load.rps, decisions: load.decisions_per_s };
    };
    const rbac = peak("rbac");
    const cerbos = peak("cerbos");
    const bare = peak("bare");
    const bulk = peak("bulk");
    const engineRate = data?.engine_bulk_decisions_per_s?.length
      ? mean(data.engine_bulk_decisions_per_s)
      : undefined;
    const bulkP99 = data?.results.bulk?.[64]?.latency_us.p99;
    const p99 = data?.results.rbac?.[64]?.latency_us.p99;
    const p99Bare = data?.results.bare?.[64]?.latency_us.p99;
    return [
      judge(
        "PDP RBAC throughput at least 5x Cerbos's",
        rbac && cerbos ? rbac.rps >= 5 * cerbos.rps : undefined,
        `${ratio(rbac?.rps, cerbos?.rps)} (peak ${fmt(rbac?.rps)} req/s at c=${rbac?.concurrency} vs Cerbos ${fmt(cerbos?.rps)} at c=${cerbos?.concurrency})`,
      ),
      judge(
        "PDP RBAC throughput at least 70% of the bare node:http baseline",
        rbac && bare ? rbac.rps >= 0.7 * bare.rps : undefined,
        `${ratio(rbac?.rps, bare?.rps)} (peak ${fmt(rbac?.rps)} vs ${fmt(bare?.rps)} req/s)`,
      ),
      judge(
        "/allowed/bulk (100 checks) decisions/s at least 0.25x the engine in process",
        bulk && engineRate ? bulk.decisions >= 0.25 * engineRate : undefined,
        `${ratio(bulk?.decisions, engineRate)} (peak ${fmt(bulk?.decisions)} decisions/s at c=${bulk?.concurrency} vs ${fmt(engineRate)} in process)`,
      ),
      judge(
        "/allowed/bulk p99 at most 10x the single-check p99 (c=64)",
        bulkP99 !== undefined && p99 !== undefined ? bulkP99 <= 10 * p99 : undefined,
        `${ratio(bulkP99, p99)} (${ms(bulkP99)} vs ${ms(p99)})`,
      ),
      judge(
        "PDP RBAC p99 at concurrency 64 at most 2x the baseline's",
        p99 !== undefined && p99Bare !== undefined ? p99 <= 2 * p99Bare : undefined,
        `${ratio(p99, p99Bare)} (${ms(p99)} vs ${ms(p99Bare)})`,
      ),
    ];
  },
};
