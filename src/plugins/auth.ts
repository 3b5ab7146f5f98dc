import fp from "fastify-plugin";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Database } from "../db/types.ts";
import { AppError, forbidden } from "../lib/errors.ts";
import { findPrincipal, findPrincipalAndPath } from "../domain/api-key-records.ts";
import { csrfMatches, sessionPrincipal, type SessionLifetime } from "../domain/session-records.ts";
import { resolvePathScope, type EnvScope, type ProjectScope } from "../domain/path-scope.ts";
import type { PathRefs, PathRows } from "../domain/path-rows.ts";
import { QueryShapes } from "../db/query-shapes.ts";
import {
  assertAccess,
  assertCoversEnvironment,
  assertCoversProject,
  bearerSecret,
  pickGrant,
  type Need,
  type Principal,
} from "../lib/access.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
    /** The project (and environment) the path names, resolved once before the handler runs. */
    pathScope: ProjectScope | EnvScope | null;
    /** The session token of a cookie-authenticated call (never logged). */
    sessionToken: string | null;
    /** The rows the path names, read with the API key (resolved into `pathScope` after the key's checks). */
    pathRows: PathRows | null;
  }
  interface FastifyContextConfig {
    /** What the route needs beyond the default (read access for reads, write access for other methods). */
    need?: Need;
    /**
     * Who may call beyond the default (a key, or a session judged by its member's grants): `public` anyone
     * (login, accepting an invite, the first setup); `session` a member's session only (its own session,
     * whatever its grants); `any` a key as usual, or any member's session whatever its grants (its
     * organizations).
     */
    auth?: "public" | "session" | "any";
  }
  interface FastifyInstance {
    sessionCookie: {
      set(reply: FastifyReply, token: string, expiresAt: string): void;
      clear(reply: FastifyReply): void;
    };
  }
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
export const CSRF_HEADER = "x-csrf-token";

export interface AuthOptions {
  db: Kysely<Database>;
  /** GATEHOUSE_PUBLIC_URL: the only origin a session's writes may come from; https makes the cookie Secure. */
  publicUrl: string;
  session: SessionLifetime;
}

/** The session cookie's name: with the `__Host-` prefix where it is Secure (no Domain, Path=/ enforced by browsers). */
export const sessionCookieName = (publicUrl: string): string =>
  publicUrl.startsWith("https:") ? "__Host-gatehouse_session" : "gatehouse_session";

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[\x21-\x7e]{1,512}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * Every /v2 request needs a valid key or session. No cache: a revoked key, a logout or a removed member stops
 * working with the next request, and the lookup is one indexed read. A session's writes also need the session's
 * CSRF token in `X-CSRF-Token` and, when the browser sends an Origin, the public URL's origin (docs/members.md).
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: AuthOptions) => {
    const cookieName = sessionCookieName(opts.publicUrl);
    const secure = opts.publicUrl.startsWith("https:");
    const origin = new URL(opts.publicUrl).origin;
    app.decorateRequest("principal", null);
    app.decorateRequest("pathScope", null);
    app.decorateRequest("sessionToken", null);
    app.decorateRequest("pathRows", null);
    app.decorate("sessionCookie", {
      set(reply: FastifyReply, token: string, expiresAt: string) {
        const attributes = `Path=/; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
        void reply.header(
          "set-cookie",
          `${cookieName}=${token}; ${attributes}; Expires=${new Date(expiresAt).toUTCString()}`,
        );
      },
      clear(reply: FastifyReply) {
        void reply.header(
          "set-cookie",
          `${cookieName}=; Path=/; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}; Max-Age=0`,
        );
      },
    });

    async function fromSession(request: FastifyRequest, token: string): Promise<Principal> {
      const principal = await sessionPrincipal(opts.db, token, opts.session);
      if (!principal)
        throw new AppError("UNAUTHORIZED", "the session is not valid or has ended; log in again");
      if (!READ_METHODS.has(request.method)) {
        const from = request.headers.origin;
        if (from !== undefined && from !== origin) {
          throw new AppError("CSRF_CHECK_FAILED", `a session's writes must come from ${origin}`);
        }
        const presented = request.headers[CSRF_HEADER];
        if (!csrfMatches(token, typeof presented === "string" ? presented : undefined)) {
          throw new AppError(
            "CSRF_CHECK_FAILED",
            "a session's writes need the X-CSRF-Token header (csrf_token of GET /v2/auth/session)",
          );
        }
      }
      request.sessionToken = token;
      return principal;
    }

    app.addHook("onRequest", async (request: FastifyRequest) => {
      if (!request.url.startsWith("/v2/") && request.url !== "/v2") return;
      if (request.routeOptions.config.auth === "public") return;
      const authorization = request.headers.authorization;
      const token = authorization === undefined ? cookieValue(request.headers.cookie, cookieName) : undefined;
      if (token !== undefined) {
        request.principal = await fromSession(request, token);
        return;
      }
      const secret = bearerSecret(authorization);
      const refs = pathRefsOf(request);
      const found = refs
        ? await findPrincipalAndPath(opts.db, secret, refs)
        : await findPrincipal(opts.db, secret).then((principal) => principal && { principal, path: null });
      if (!found) throw new AppError("UNAUTHORIZED", "the API key is not valid");
      request.principal = found.principal;
      request.pathRows = found.path;
    });
    // The route's scope is decided before its body is validated: a key that may not call it gets 403, whatever
    // it sends.
    app.addHook("preValidation", async (request: FastifyRequest) => {
      const principal = request.principal;
      if (!principal) return;
      const { auth, need: routeNeed } = request.routeOptions.config;
      const restricted = principal.member?.restricted;
      if (restricted && auth !== "session") throw restrictedSession(restricted);
      if (principal.member && (auth === "session" || auth === "any")) return;
      const params = request.params as Record<string, string | undefined>;
      const project = params["proj_id"];
      const environment = params["env_id"];
      const need = routeNeed ?? { access: READ_METHODS.has(request.method) ? "read" : "write" };
      // A session is judged by the member's grant that fits the path and the need best.
      if (principal.member)
        Object.assign(principal, pickGrant(principal.member.grants, project, environment, need));
      if (project !== undefined && environment !== undefined)
        assertCoversEnvironment(principal, project, environment);
      else if (project !== undefined) assertCoversProject(principal, project);
      assertAccess(principal, need);
      if (auth === "session")
        throw forbidden("this operation needs a member's session (POST /v2/auth/login)");
      if (need.access !== "read") await assertNotFrozen(opts.db, principal.organizationId);
    });
    // The writes of an organization can be refused while it moves (423): say so in each write route's document.
    app.addHook("onRoute", (route) => {
      const methods = [route.method].flat();
      const response = route.schema?.response as Record<string, unknown> | undefined;
      if (!route.url.startsWith("/v2/") || methods.every((m) => READ_METHODS.has(m)) || !response) return;
      const { auth, need } = (route.config ?? {}) as { auth?: string; need?: Need };
      if (auth === "public" || auth === "session" || need?.access === "read" || response[401] === undefined)
        return;
      response[423] ??= { $ref: "ErrorDetails#" };
    });
    // After validation: a malformed body is a 422 even where the path names nothing (404).
    app.addHook("preHandler", async (request: FastifyRequest) => {
      const principal = request.principal;
      const refs = pathRefsOf(request);
      if (!principal || !refs) return;
      request.pathScope = await resolvePathScope(
        opts.db,
        principal.organizationId,
        refs,
        request.pathRows ?? undefined,
      );
    });
  },
  { name: "auth" },
);

/** The freeze check, built once (QueryShapes): it runs before every write. */
const shapes = new QueryShapes();

/**
 * A frozen organization (`gatehouse orgs freeze`, or `orgs export --freeze`) is being moved to another region: a
 * write now would be left behind by the export and lost with the delete, so it is refused; reads go on. Read at
 * every write, not cached: the freeze holds from the moment the command returns.
 */
async function assertNotFrozen(db: Kysely<Database>, organizationId: string): Promise<void> {
  const [org] = await shapes.rows(db, "frozen", [organizationId], ([id]) =>
    db
      .selectFrom("organizations")
      .select(["key", "frozen_at"])
      .where("id", "=", id as string),
  );
  if (org?.frozen_at)
    throw new AppError(
      "ORGANIZATION_FROZEN",
      `organization '${org.key}' is frozen for a move to another region (since ${org.frozen_at}): writes are refused until the move is done or it is unfrozen (gatehouse orgs unfreeze); reads work`,
    );
}

const restrictedSession = (why: "sso" | "two_factor") =>
  why === "sso"
    ? new AppError(
        "SSO_REQUIRED",
        "this organization requires single sign-on: log out and sign in with its identity provider",
      )
    : new AppError(
        "TWO_FACTOR_ENROLMENT_REQUIRED",
        "this organization requires a second factor: enrol one on your profile page (POST /v2/auth/two-factor/enrol)",
      );

function pathRefsOf(request: FastifyRequest): PathRefs | undefined {
  const params = request.params as Record<string, string | undefined>;
  const project = params["proj_id"];
  return project === undefined ? undefined : { project, environment: params["env_id"] };
}

export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError("UNAUTHORIZED", "the API key is not valid");
  return request.principal;
}

/** The member behind a session call. */
export function memberOf(request: FastifyRequest): Principal & { member: NonNullable<Principal["member"]> } {
  const principal = principalOf(request);
  if (!principal.member) throw forbidden("this operation needs a member's session (POST /v2/auth/login)");
  return principal as Principal & { member: NonNullable<Principal["member"]> };
}

/** The environment of a route whose path names one (`:proj_id/:env_id`). */
export function envOf(request: FastifyRequest): EnvScope {
  const scope = request.pathScope;
  if (!scope || !("environment" in scope)) throw new Error(`${request.url}: the route names no environment`);
  return scope;
}

/** The project of a route whose path names one (`:proj_id`). */
export function projectOf(request: FastifyRequest): ProjectScope {
  if (!request.pathScope) throw new Error(`${request.url}: the route names no project`);
  return request.pathScope;
}
