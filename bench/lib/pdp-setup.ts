import { settings } from "./config.ts";
import { Api, pool } from "./http.ts";
import { buildPdpDataset, type Check, type PdpDataset } from "./pdp-dataset.ts";
import { BOOTSTRAP_KEY, sleep, startGatehouse, type Gatehouse } from "./procs.ts";
import { fail, type Context } from "./scenario.ts";
import { seedPdpDataset } from "./seed.ts";
import type { WrkPlan } from "./wrk.ts";

/** A gatehouse serve with the PDP dataset seeded through the API, and every prepared check verified once. */
export interface SeededPdp {
  dataset: PdpDataset;
  /** The database folder, for more servers over the same data. */
  dataDir: string;
  server: Gatehouse;
  envKey: string;
  seedSeconds: number;
}

/** The decision's kind each check must be allowed by (a deny has none). */
const EXPECTED_KIND = { rbac: "rbac", rebac1: "rebac", rebac3: "rebac", abac: "abac" } as const;

export async function seededPdp(ctx: Context): Promise<SeededPdp> {
  const dataset = buildPdpDataset(settings.pdp);
  const dataDir = ctx.res.tempDir("pdp");
  const server = await startGatehouse(ctx.res, { dataDir, pdp: true });
  const api = new Api(server.apiUrl, BOOTSTRAP_KEY);
  const seedStart = Date.now();
  await seedPdpDataset(api, dataset, (message) => ctx.log(`seeded ${message}`));
  const seedSeconds = (Date.now() - seedStart) / 1000;
  ctx.log(`seeding through the API took ${seedSeconds.toFixed(1)} s`);
  const envKey = (await api.call("GET", "/v2/api-key/default/production")).json.secret as string;
  const pdp = new Api(server.pdpUrl as string, envKey);

  // Every prepared check once, before any load: a wrong answer fails the run here.
  for (const kind of ["rbac", "rebac1", "rebac3", "abac"] as const) {
    const checks = dataset.checks[kind];
    const wrong: string[] = [];
    await pool(checks, 8, async (check) => {
      const answer = await pdp.call("POST", "/allowed", check.body);
      const allowedBy = answer.json?.debug?.reason?.kind;
      if (answer.json?.allow !== check.allow || (check.allow && allowedBy !== EXPECTED_KIND[kind])) {
        wrong.push(`${JSON.stringify(check.body)} -> ${answer.text}`);
      }
    });
    if (wrong.length > 0) fail(`${kind}: ${wrong.length} wrong decisions, e.g. ${wrong[0]}`);
    const allows = checks.filter((check) => check.allow).length;
    ctx.log(`${kind}: ${checks.length} checks verified (${allows} allow, ${checks.length - allows} deny)`);
  }
  for (const bulk of dataset.bulk) {
    const answer = await pdp.call("POST", "/allowed/bulk", bulk.checks);
    const got = (answer.json.allow as { allow: boolean }[]).map((one) => (one.allow ? "1" : "0")).join("");
    if (got !== bulk.pattern) fail(`/allowed/bulk answered ${got}, expected ${bulk.pattern}`);
  }
  return { dataset, dataDir, server, envKey, seedSeconds };
}

/** A load of single checks on `/allowed`, each answer compared with the expected decision. */
export const allowedPlan = (
  url: string,
  envKey: string,
  checks: Check[],
  mode: "pdp" | "none",
  kind?: string,
): WrkPlan => ({
  url,
  mode,
  ...(kind && { kind }),
  headers: { "content-type": "application/json", authorization: `Bearer ${envKey}` },
  requests: checks.map((check) => ({
    method: "POST",
    path: "/allowed",
    body: JSON.stringify(check.body),
    expect: check.allow ? "1" : "0",
  })),
});

/** Sends one check of `checks` every 50 ms while a load runs and fails on a wrong decision. */
export function sampler(pdp: Api, checks: Check[], path = "/allowed") {
  return async (signal: AbortSignal) => {
    let next = 0;
    while (!signal.aborted) {
      const check = checks[next++ % checks.length] as Check;
      const answer = await pdp.call("POST", path, check.body);
      if (answer.json?.allow !== check.allow)
        throw new Error(
          `under load, ${JSON.stringify(check.body)} answered ${answer.text}; expected allow=${check.allow}`,
        );
      await sleep(50);
    }
  };
}
