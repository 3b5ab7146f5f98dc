// The control plane's view of the embedded PDP: what its check routes ask of it, as types only. The PDP's runtime
// and routes stay behind this boundary (src/pdp/http/embedded-decisions.ts implements it).
import type { Decision, ResourcePlan, UserPermissions } from "./engine/types.ts";

/** The environment a check is asked about. */
export interface DecidedEnvironment {
  organizationId: string;
  projectId: string;
  environmentId: string;
}

/** Permit's AuthorizationResult, as the PDP's `/allowed` answers: `result` repeats `allow` for old SDKs. */
export interface AuthorizationResult {
  allow: boolean;
  result: boolean;
  debug: { reason: Decision["reason"]; revision: number };
}

/** The PDP's `/allowed` answer with its reason, that reason in words, and the revision it was decided at. */
export type ExplainedCheck = AuthorizationResult & {
  reason: Decision["reason"];
  explanation: string;
  revision: number;
};

export interface DecisionPort {
  readonly pdpId: string;
  check(env: DecidedEnvironment, body: unknown): Promise<ExplainedCheck>;
  bulk(env: DecidedEnvironment, body: unknown): Promise<{ allow: ExplainedCheck[] }>;
  userPermissions(
    env: DecidedEnvironment,
    body: unknown,
  ): Promise<{ permissions: UserPermissions; revision: number }>;
  planResources(env: DecidedEnvironment, body: unknown): Promise<ResourcePlan & { revision: number }>;
  /** A page of a listing walk (docs/data-filtering.md): the PDP's `/list/resources` and `/list/subjects`. */
  listResources(
    env: DecidedEnvironment,
    body: unknown,
  ): Promise<ListingPage<{ key: string; tenant: string }>>;
  listSubjects(env: DecidedEnvironment, body: unknown): Promise<ListingPage<{ key: string }>>;
  /** The revision of the environment the PDP holds, and when its copy last caught up (ms since the epoch). */
  held(env: DecidedEnvironment): Promise<{ revision: number; lastSyncAt: number }>;
}

export interface ListingPage<T> {
  results: T[];
  next_cursor: string | null;
  revision: number;
}

/** Where the control plane finds the embedded PDP built over it (none while the PDP is off). */
export interface PdpSlot {
  current: DecisionPort | undefined;
  /** The ports the embedded PDP listens on once bound (`opa` 0 when the OPA port is off). */
  ports?: { pdp: number; opa: number };
}
