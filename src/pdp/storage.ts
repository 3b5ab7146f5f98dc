import type { DatabaseOutage } from "../db/outage.ts";
import type { FeedEntry } from "../changes/feed.ts";
import type { Principal } from "../lib/access.ts";
import type { Engine } from "./engine/index.ts";
import type { Change, EnvironmentData } from "./engine/types.ts";

/*
 * The PDP's boundary with storage: what its runtime (replicas, the decision log) reads and writes, as types and
 * one interface. The embedded PDP gets it from src/domain/pdp-storage.ts over the database; the standalone PDP
 * implements the feed over HTTP. The control plane's modules import only these types from src/pdp.
 */

/** An environment's data at one revision. */
export interface DataSnapshot {
  /** The environment revision the data is exactly at. */
  revision: number;
  data: EnvironmentData;
}

/**
 * An environment at one revision, in one of three forms: its data; its pages, read as they are asked for (the
 * embedded PDP, from the database); or an engine already built from its pages (the standalone PDP, as the stream
 * arrives). The last two keep the whole data out of memory.
 */
export type Snapshot =
  | DataSnapshot
  | { revision: number; pages: AsyncIterable<EnvironmentData> }
  | { revision: number; engine: Engine };

/**
 * The first line of a streamed snapshot (NDJSON): the lines after it are `{"policy": ...}`, then pages of facts of
 * one kind each (`{"users": [...]}`, `{"role_assignments": [...]}`, ...), then `{"end": {"facts": n}}`.
 */
export interface SnapshotHeader {
  format: "gatehouse-snapshot/ndjson-1";
  organization_id: string;
  project_id: string;
  environment_id: string;
  revision: number;
}

/**
 * A round of the feed: its entries after the caller's revision, in order, and the revision the caller holds once it
 * applied them all; or `gone` when the feed no longer keeps every change after the caller's revision (the retention
 * purge removed some): the caller loads a snapshot instead.
 */
export type FeedRound = { changes: FeedEntry<Change>[]; revision: number } | { gone: true };

/** Where a replica gets its data: the database (embedded) or the control plane over HTTP (standalone). */
export interface FeedSource {
  snapshot(): Promise<Snapshot>;
  changesAfter(revision: number): Promise<FeedRound>;
}

export type DecisionQuery =
  "check" | "bulk_check" | "get_user_permissions" | "get_authorized_users" | "all_tenants" | "user_tenants";

/**
 * One decision as the PDP records it, and as a chunk stores it beside its id: a field left out (or undefined) is
 * null. The environment, its organization and project, and the PDP belong to the chunk; the time is the id's.
 */
export interface DecisionRecord {
  query: DecisionQuery;
  user_key?: string | undefined;
  action?: string | undefined;
  resource_type?: string | undefined;
  resource_key?: string | undefined;
  tenant?: string | undefined;
  decision?: boolean | undefined;
  reason?: unknown;
  /** The request, when it says more than the user, action, resource and tenant fields. */
  input?: unknown;
  /** The answer of a query that is not a single check; a check's answer is `decision`. */
  result?: unknown;
  revision: number;
  latency_us: number;
}

/** One decision as the log reads it back: every field named, null where the record left it out. */
export interface DecisionLogEntry {
  /** A UUIDv7: its first 48 bits are the entry's time in milliseconds, so ids sort by time. */
  id: string;
  timestamp: string;
  pdp_id: string;
  query: DecisionQuery;
  user_key: string | null;
  action: string | null;
  resource_type: string | null;
  resource_key: string | null;
  tenant: string | null;
  decision: boolean | null;
  reason: unknown;
  input: unknown;
  result: unknown;
  revision: number;
  latency_us: number;
}

/** The fields a record may leave out, in the order entries hold them. */
const OPTIONAL_DECISION_FIELDS = [
  "user_key",
  "action",
  "resource_type",
  "resource_key",
  "tenant",
  "decision",
  "reason",
  "input",
  "result",
] as const;
type OptionalDecisionFields = Pick<DecisionRecord, (typeof OPTIONAL_DECISION_FIELDS)[number]>;

/** The optional fields of a record or an entry, `missing` (null to read, undefined to store) where one is absent. */
export const optionalDecisionFields = <M extends null | undefined>(
  e: { [K in keyof OptionalDecisionFields]?: OptionalDecisionFields[K] | null },
  missing: M,
) =>
  Object.fromEntries(OPTIONAL_DECISION_FIELDS.map((k) => [k, e[k] ?? missing])) as {
    [K in keyof OptionalDecisionFields]-?: Exclude<OptionalDecisionFields[K], undefined | null> | M;
  };

/**
 * Decisions of one environment made by one PDP, as the log stores them: a JSON array of `{id, ...DecisionRecord}`
 * objects as UTF-8 bytes, neither parsed nor decoded on the way to the database, which keeps the text as one row.
 * `firstId` and `lastId` are the least and greatest ids, which bound the chunk in time.
 */
export interface DecisionLogChunk {
  environmentId: string;
  pdpId: string;
  entries: Uint8Array<ArrayBuffer>;
  count: number;
  firstId: string;
  lastId: string;
  /**
   * Where each decision is in `entries`, four numbers a decision: its object's start and end, and for a check of a
   * bulk entry its bulk's head (`{"query":...,"revision":N`), start and end (0, 0 for a plain entry). Set by the
   * logger that wrote the chunk, so that log export copies the bytes rather than parsing them; a chunk a
   * standalone PDP shipped has none.
   */
  spans?: Uint32Array;
}

/** What the embedded PDP needs of the database. */
export interface PdpStorage {
  outage: DatabaseOutage;
  /** Whether an error means the database is away (so the PDP answers from memory), not a bad request. */
  isUnavailable(error: unknown): boolean;
  /** The API key with this secret, or null. */
  findKey(secret: string): Promise<Principal | null>;
  /** The environment named by a project and an environment reference (id or key) of an organization. */
  findEnvironment(
    organizationId: string,
    projectRef: string,
    environmentRef: string,
  ): Promise<{ id: string; projectId: string } | undefined>;
  feed(environmentId: string): FeedSource;
  /** Where decision-log chunks go, until closed. */
  openDecisionSink(): { write(chunk: DecisionLogChunk): Promise<void>; close(): Promise<void> };
}
