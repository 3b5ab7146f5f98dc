import { AppError, forbidden } from "./errors.ts";

export type ScopeLevel = "org" | "project" | "env";
export type AccessLevel = "admin" | "write" | "read" | "no_access";

/** Who is calling: the API key or the member's session, resolved once per request by the auth plugin. */
export interface Principal {
  /** The key's id; for a member, the member's id (the rate limit counts per member). */
  keyId: string;
  /** The key's name; for a member, the e-mail. */
  keyName: string | null;
  organizationId: string;
  projectId: string | null;
  projectKey: string | null;
  environmentId: string | null;
  environmentKey: string | null;
  level: ScopeLevel;
  access: AccessLevel;
  /** Set for a session: the member, and every grant it holds in the active organization. */
  member?: MemberIdentity;
}

export interface MemberIdentity {
  id: string;
  email: string;
  sessionId: string;
  grants: Grant[];
  /**
   * A password session in an organization that requires SSO (`sso`), or a second factor the member has not
   * enrolled (`two_factor`): it reaches only its own session's routes (`auth: "session"`).
   */
  restricted?: "sso" | "two_factor" | undefined;
}

/** One of a member's grants, with the keys of its project and environment (paths name either id or key). */
export interface Grant {
  level: ScopeLevel;
  access: AccessLevel;
  projectId: string | null;
  projectKey: string | null;
  environmentId: string | null;
  environmentKey: string | null;
}

/** What an operation needs: the broadest key level allowed to do it, and an access level. */
export interface Need {
  level?: ScopeLevel;
  access: "read" | "write" | "admin";
}

const LEVEL_RANK: Record<ScopeLevel, number> = { org: 0, project: 1, env: 2 };
const ACCESS_RANK: Record<AccessLevel, number> = { admin: 3, write: 2, read: 1, no_access: 0 };
const NEED_RANK: Record<Need["access"], number> = { admin: 3, write: 2, read: 1 };

const meets = (scope: Grant, need: Need): boolean =>
  !(need.level && LEVEL_RANK[scope.level] > LEVEL_RANK[need.level]) &&
  ACCESS_RANK[scope.access] >= NEED_RANK[need.access];

export function assertAccess(principal: Principal, need: Need): void {
  if (need.level && LEVEL_RANK[principal.level] > LEVEL_RANK[need.level]) {
    throw forbidden(
      `this operation needs an API key of ${need.level === "org" ? "the organization" : `${need.level} level or above`}`,
    );
  }
  if (ACCESS_RANK[principal.access] < NEED_RANK[need.access]) {
    throw forbidden(`this operation needs ${need.access} access; the API key has ${principal.access}`);
  }
}

/** A reference (id or key) names the principal's own project or environment. */
const sameRef = (ref: string, id: string | null, key: string | null): boolean =>
  ref.toLowerCase() === id || ref === key;

const coversProject = (scope: Grant, projectRef: string): boolean =>
  scope.level === "org" || sameRef(projectRef, scope.projectId, scope.projectKey);
const coversEnvironment = (scope: Grant, envRef: string): boolean =>
  scope.level !== "env" || sameRef(envRef, scope.environmentId, scope.environmentKey);

/** Checked before any lookup, so a narrower key learns nothing about objects outside its scope. */
export function assertCoversProject(principal: Principal, projectRef: string): void {
  if (!coversProject(principal, projectRef)) {
    throw forbidden("the API key's scope does not cover this project");
  }
}

export function assertCoversEnvironment(principal: Principal, projectRef: string, envRef: string): void {
  assertCoversProject(principal, projectRef);
  if (!coversEnvironment(principal, envRef)) {
    throw forbidden("the API key's scope does not cover this environment");
  }
}

/** A member with no grant in its active organization: in scope nowhere, allowed nothing. */
export const NO_GRANT: Grant = {
  level: "org",
  access: "no_access",
  projectId: null,
  projectKey: null,
  environmentId: null,
  environmentKey: null,
};

/**
 * The one grant of a member that a request is judged by, so a session follows the same 401/403/404 rules as a
 * key: among the grants that cover the path's project and environment (all of them when the path names none),
 * the broadest that meets the route's need, else the broadest (whose check then gives the 403). With no grant
 * covering the path, the broadest grant is returned, and the scope check refuses it.
 */
export function pickGrant(
  grants: readonly Grant[],
  projectRef: string | undefined,
  envRef: string | undefined,
  need: Need,
): Grant {
  const covering = grants.filter(
    (g) =>
      projectRef === undefined ||
      (coversProject(g, projectRef) && (envRef === undefined || coversEnvironment(g, envRef))),
  );
  const order = (covering.length > 0 ? covering : [...grants]).sort(
    (a, b) => LEVEL_RANK[a.level] - LEVEL_RANK[b.level] || ACCESS_RANK[b.access] - ACCESS_RANK[a.access],
  );
  return order.find((g) => meets(g, need)) ?? order[0] ?? NO_GRANT;
}

// RFC 7235: the scheme is case-insensitive and one or more spaces part it from the token (Permit's Python SDK
// sends `bearer <key>`).
const BEARER_RE = /^Bearer +([\x21-\x7e]{1,512})$/i;

/** The token of an `Authorization: Bearer <token>` header, or undefined when there is none; every port's one parser. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER_RE.exec(authorization)?.[1];
}

/** The API key of an `Authorization: Bearer <key>` header: 401 when the header is missing or malformed. */
export function bearerSecret(authorization: string | undefined): string {
  if (authorization === undefined) throw new AppError("UNAUTHORIZED", "the Authorization header is missing");
  const secret = bearerToken(authorization);
  if (!secret) throw new AppError("UNAUTHORIZED", "the Authorization header must be 'Bearer <API key>'");
  return secret;
}
