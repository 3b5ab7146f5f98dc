import { AppError, forbidden } from "./errors.ts";

export type ScopeLevel = "org" | "project" | "env";
export type AccessLevel = "admin" | "write" | "read" | "no_access";

/** Who is calling: the API key, resolved once per request by the auth plugin. */
export interface Principal {
  keyId: string;
  keyName: string | null;
  organizationId: string;
  projectId: string | null;
  projectKey: string | null;
  environmentId: string | null;
  environmentKey: string | null;
  level: ScopeLevel;
  access: AccessLevel;
}

/** What an operation needs: the broadest key level allowed to do it, and an access level. */
export interface Need {
  level?: ScopeLevel;
  access: "read" | "write" | "admin";
}

const LEVEL_RANK: Record<ScopeLevel, number> = { org: 0, project: 1, env: 2 };
const ACCESS_RANK: Record<AccessLevel, number> = { admin: 3, write: 2, read: 1, no_access: 0 };
const NEED_RANK: Record<Need["access"], number> = { admin: 3, write: 2, read: 1 };

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

/** Checked before any lookup, so a narrower key learns nothing about objects outside its scope. */
export function assertCoversProject(principal: Principal, projectRef: string): void {
  if (principal.level !== "org" && !sameRef(projectRef, principal.projectId, principal.projectKey)) {
    throw forbidden("the API key's scope does not cover this project");
  }
}

export function assertCoversEnvironment(principal: Principal, projectRef: string, envRef: string): void {
  assertCoversProject(principal, projectRef);
  if (principal.level === "env" && !sameRef(envRef, principal.environmentId, principal.environmentKey)) {
    throw forbidden("the API key's scope does not cover this environment");
  }
}

export const BEARER_RE = /^Bearer ([\x21-\x7e]{1,512})$/;

/** The API key of an `Authorization: Bearer <key>` header: 401 when the header is missing or malformed. */
export function bearerSecret(authorization: string | undefined): string {
  if (authorization === undefined) throw new AppError("UNAUTHORIZED", "the Authorization header is missing");
  const secret = BEARER_RE.exec(authorization)?.[1];
  if (!secret) throw new AppError("UNAUTHORIZED", "the Authorization header must be 'Bearer <API key>'");
  return secret;
}
