import { randomUUID } from "node:crypto";

/** Every error code the API answers with, its HTTP status and its human title. */
export const ERROR_CODES = {
  INVALID_INPUT: {
    status: 422,
    title: "The request is invalid",
    help: 'A field is missing, has the wrong type or an unaccepted value. `detail` names each problem by its location (`loc`, such as `["body", "key"]`).',
  },
  INVALID_ENCODING: {
    status: 400,
    title: "The request body is not valid UTF-8",
    help: "Send the JSON body encoded as UTF-8.",
  },
  UNAUTHORIZED: {
    status: 401,
    title: "Missing or invalid API key",
    help: "Send `Authorization: Bearer <API key>`, or log in for a session cookie. The key or session is missing, malformed, unknown, revoked or rotated; an operator without any admin key can make one with `gatehouse keys create`.",
  },
  FORBIDDEN_ACCESS: {
    status: 403,
    title: "The API key does not cover this operation",
    help: "The key is valid, but its scope (organization, project or environment) does not cover the path, or its access level (read, write, admin) is too low. Use a key of the right scope and level.",
  },
  /** A session's write without its X-CSRF-Token, or from another origin. */
  CSRF_CHECK_FAILED: {
    status: 403,
    title: "The request failed the cross-site request check",
    help: "A write made with a session cookie needs the session's `X-CSRF-Token` header (csrf_token of GET /v2/auth/session) and, when the browser sends an Origin, the server's public origin. Scripts should use an API key instead.",
  },
  /** A login with a wrong e-mail or password: the same body whether the e-mail exists or not. */
  INVALID_CREDENTIALS: {
    status: 401,
    title: "The e-mail or password is wrong",
    help: "Check both and try again; repeated failures are limited per account and per address (429).",
  },
  /** A password login whose member has a second factor, sent without its code (the login page asks for it). */
  TWO_FACTOR_REQUIRED: {
    status: 401,
    title: "A second factor is needed",
    help: "The e-mail and password are right and the member has a second factor: send the login again with `totp_code` (the authenticator app's 6 digits) or a `recovery_code`.",
  },
  /** A wrong or used TOTP or recovery code: counted as a failed login. */
  INVALID_TWO_FACTOR_CODE: {
    status: 401,
    title: "The code is wrong",
    help: "The authenticator code is wrong, expired or already used, or the recovery code is unknown or used. Failures count as failed logins (429 after too many).",
  },
  /** A password login (or a password session's call) in an organization that requires single sign-on. */
  SSO_REQUIRED: {
    status: 403,
    title: "The organization requires single sign-on",
    help: "Sign in with the organization's identity provider (the login page's \"Sign in with …\" button, GET /v2/auth/sso/{org}/login). Only the break-glass admin an organization admin named may use a password.",
  },
  /** A password session in an organization that requires a second factor, before the member enrolled one. */
  TWO_FACTOR_ENROLMENT_REQUIRED: {
    status: 403,
    title: "Enrol a second factor first",
    help: "The organization requires a second factor: enrol one (POST /v2/auth/two-factor/enrol, then confirm) on the profile page; until then the session reaches only its own routes.",
  },
  /** The OpenID provider's answer was refused (state, token, claims or domain). Nothing was created. */
  SSO_FAILED: {
    status: 401,
    title: "Single sign-on failed",
    help: "The sign-in with the identity provider was refused: an unknown, used or expired sign-in (start again from the login page), an ID token that failed its checks (signature, issuer, audience, nonce, expiry), an unverified e-mail or a domain the organization does not allow. The message says which.",
  },
  NOT_FOUND: {
    status: 404,
    title: "Not found",
    help: "Nothing with this id or key exists in what the key reaches (another organization's objects do not exist for it). `additional_info` names the object and the reference.",
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    title: "Method not allowed",
    help: "The path exists but not with this HTTP method; the API reference at /docs lists each path's methods.",
  },
  WRONG_REGION: {
    status: 421,
    title: "This deployment does not serve that region",
    help: "The API key belongs to an organization of another region. Send the call to the base URL in `additional_info.api_url` (docs/regions.md).",
  },
  DUPLICATE_ENTITY: {
    status: 409,
    title: "An object with this key already exists",
    help: "Keys are unique within their parent. Choose another key, or update the existing object.",
  },
  CONFLICT: {
    status: 409,
    title: "The request conflicts with the current state",
    help: "The change cannot be made as things are (for example deleting an organization's last admin key); the message says why.",
  },
  /** A change stream or a PDP's sync asked for the changes after a revision no longer kept (docs/events.md). */
  REVISION_GONE: {
    status: 410,
    title: "The changes after this revision are no longer kept",
    help: "The environment's change feed no longer holds every change after the revision asked for (its retention purged them). Read the current state (the list routes; a PDP: the snapshot), then follow the stream from `additional_info.revision`, the environment's revision now.",
  },
  /** A write to an organization frozen while it moves between regions (docs/operations.md). */
  ORGANIZATION_FROZEN: {
    status: 423,
    title: "The organization is frozen for a move",
    help: "An operator froze the organization (`gatehouse orgs freeze`) while it moves to another region: writes are refused, reads work. Once the move is done, send writes to the new region (its keys); if the move was called off, the operator unfreezes it.",
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    title: "The request body is too large",
    help: "Split the request (bulk endpoints take batches), or raise GATEHOUSE_BODY_LIMIT_BYTES on the server.",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: "Unsupported content type",
    help: "Send bodies as `Content-Type: application/json`.",
  },
  /** HTTP the server cannot parse, the AuthZEN routes' malformed requests (that specification asks for 400), unsafe facts paths. */
  BAD_REQUEST: {
    status: 400,
    title: "Bad request",
    help: "The request is not HTTP the server can parse, an AuthZEN request is malformed (that specification answers 400 where the API answers 422), or a path through the PDP's facts proxy has a `.` or `..` segment or encodes `/`, `\\` or `.`; the message says which.",
  },
  REQUEST_TIMEOUT: {
    status: 408,
    title: "The request took too long to arrive",
    help: "The client did not send the whole request in time; send it again.",
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    title: "Request headers too large",
    help: "The request's headers are larger than the server accepts (Node's limit, 16 KB by default); send fewer or smaller headers, cookies above all.",
  },
  PAGINATION_SIZE_OVERREACHED: {
    status: 422,
    title: "per_page is larger than allowed",
    help: "Ask for fewer items per page and follow the pages.",
  },
  CURSOR_EXPIRED: {
    status: 410,
    title: "The listing cursor is too old",
    help: "A listing walk answers every page at the revision of its first page; the PDP keeps a bounded history of recent revisions (GATEHOUSE_PDP_LISTING_HISTORY) and this cursor's revision has left it, or the PDP restarted. Start the walk again without a cursor.",
  },
  TOO_MANY_REQUESTS: {
    status: 429,
    title: "Rate limit exceeded",
    help: "The key made more requests this minute than its organization's limit. Wait the seconds in `Retry-After`; the limit is GATEHOUSE_RATE_LIMIT_PER_MINUTE or the organization's `settings.rate_limit_per_minute`.",
  },
  TIMEOUT: {
    status: 504,
    title: "The operation timed out",
    help: "The operation did not finish in time (for example a PDP waiting for a revision, or a background task past its limit). Try again; see the message for which.",
  },
  UNEXPECTED_ERROR: {
    status: 500,
    title: "Unexpected error",
    help: "A fault in the service. The server log has the details under the error body's `id` (the request id); report it with that id.",
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    title: "The service is not ready",
    help: "The database cannot be reached for now, the service is starting or stopping, or the write collided with a concurrent one and was rolled back. Try again shortly; /readyz says when it is ready.",
  },
} as const satisfies Record<string, { status: number; title: string; help: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ValidationDetail {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** The one error class of the service: a code from ERROR_CODES and a message safe to show to the client. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly additionalInfo?: Record<string, unknown>,
    readonly detail?: ValidationDetail[],
  ) {
    super(message);
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const notFound = (what: string, ref: string): AppError =>
  new AppError("NOT_FOUND", `${what} '${ref}' was not found`, { object: what, ref });
/** 404 for a part of a resource (its role, action or relation) that the resource does not have. */
export const notFoundOn = (what: string, ref: string, resource: { key: string }): AppError =>
  new AppError("NOT_FOUND", `${what} '${ref}' was not found on resource '${resource.key}'`, {
    object: what,
    ref,
    resource: resource.key,
  });
export const forbidden = (message: string): AppError => new AppError("FORBIDDEN_ACCESS", message);
export const duplicate = (what: string, key: string): AppError =>
  new AppError("DUPLICATE_ENTITY", `${what} with key '${key}' already exists`, { object: what, key });
export const invalid = (message: string, loc: (string | number)[] = ["body"]): AppError =>
  new AppError("INVALID_INPUT", message, undefined, [{ loc, msg: message, type: "value_error" }]);

export interface ErrorBody {
  id: string;
  error_code: string;
  title: string;
  message: string;
  support_link: string;
  additional_info?: Record<string, unknown>;
  detail?: ValidationDetail[];
}

export function errorBody(error: AppError, publicUrl: string): ErrorBody {
  const body: ErrorBody = {
    id: randomUUID(),
    error_code: error.code,
    title: ERROR_CODES[error.code].title,
    message: error.message,
    support_link: `${publicUrl}/errors#${error.code}`,
  };
  if (error.additionalInfo) body.additional_info = error.additionalInfo;
  if (error.detail) body.detail = error.detail;
  return body;
}
