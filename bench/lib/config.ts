import path from "node:path";
import { fileURLToPath } from "node:url";

/** Sizes and durations of the benchmark runs. `BENCH_SCALE=small` shrinks everything for a quick check. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BENCH_DIR = path.join(REPO_ROOT, "bench");

export type ScaleName = "full" | "small";
export const SCALE: ScaleName = process.env["BENCH_SCALE"] === "small" ? "small" : "full";
const small = SCALE === "small";

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

/** Full-scale results are committed in bench/results; small runs go to bench/results/tmp (ignored by git). */
export const RESULTS_DIR =
  process.env["BENCH_RESULTS_DIR"] ??
  (small ? path.join(BENCH_DIR, "results", "tmp") : path.join(BENCH_DIR, "results"));

export const settings = {
  /** Seconds of load per measured point (one target at one concurrency). */
  loadSeconds: num("BENCH_DURATION", small ? 2 : 8),
  /** Seconds of load before the first measured point of each target, to let the JIT settle. */
  warmupSeconds: num("BENCH_WARMUP", small ? 1 : 3),
  concurrencies: [1, 8, 64],
  pdp: {
    users: 10_000,
    tenants: 100,
    /** Prepared checks each scenario rotates through. */
    checks: small ? 300 : 2000,
    bulkBodies: small ? 10 : 50,
    bulkSize: 100,
    /**
     * The decision log's A/B: pairs of servers (one with the log on, one off: a block), slices per server and
     * concurrency, and seconds per slice.
     */
    abPairs: small ? 1 : 4,
    abSlices: small ? 1 : 4,
    abSeconds: small ? 1 : 2,
  },
  engine: {
    tuples: small ? 50_000 : 1_000_000,
    assignments: small ? 50_000 : 1_000_000,
    /** Seconds of checks per measured kind. */
    seconds: small ? 0.5 : 2,
  },
  scale: {
    users: small ? [1_000, 10_000] : [10_000, 100_000, 1_000_000],
  },
  controlPlane: {
    importUsers: small ? 5_000 : 100_000,
    importAssignments: small ? 50_000 : 1_000_000,
    copyResources: small ? 50 : 1_000,
    copyActions: 10,
    copyRoles: 10,
    /** Seconds of load per control-plane operation. */
    opSeconds: num("BENCH_OP_DURATION", small ? 2 : 5),
    opConcurrency: 8,
    dialects: (process.env["BENCH_DIALECTS"] ?? "sqlite,postgres").split(",").filter(Boolean),
  },
  lists: {
    smallUsers: 1_000,
    largeUsers: small ? 100_000 : 1_000_000,
    /** Interleaved rounds; each measures every request once. */
    rounds: num("BENCH_LIST_ROUNDS", small ? 20 : 100),
  },
  decisionLog: {
    /** Decisions stored and read back; a multiple of the 10,000 users. */
    entries: small ? 10_000 : 100_000,
  },
  soak: {
    /** One-minute slices of load on one server (BENCH_SOAK_MINUTES). */
    minutes: num("BENCH_SOAK_MINUTES", small ? 1 : 10),
    concurrency: 64,
  },
  propagation: {
    writes: small ? 40 : 200,
  },
  standalone: {
    /** Facts of the environment a standalone PDP starts on (memory), and of the one it follows (propagation). */
    startFacts: small ? 300_000 : 5_000_000,
    followFacts: small ? 100_000 : 1_000_000,
    writes: small ? 40 : 300,
  },
  pgUrl:
    process.env["BENCH_DATABASE_URL"] ??
    process.env["TEST_DATABASE_URL"] ??
    "postgres://postgres@127.0.0.1:5432/test",
};
