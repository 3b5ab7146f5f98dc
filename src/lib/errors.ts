import { randomUUID } from "node:crypto";

/** Every error code the API answers with, its HTTP status and its human title. */
export const ERROR_CODES = {
  INVALID_INPUT: { status: 422, title: "The request is invalid" },
  INVALID_ENCODING: { status: 400, title: "The request body is not valid UTF-8" },
  UNAUTHORIZED: { status: 401, title: "Missing or invalid API key" },
  FORBIDDEN_ACCESS: { status: 403, title: "The API key does not cover this operation" },
  /** A session's write without its X-CSRF-Token, or from another origin. */
  CSRF_CHECK_FAILED: { status: 403, title: "The request failed the cross-site request check" },
  /** A login with a wrong e-mail or password: the same body whether the e-mail exists or not. */
  INVALID_CREDENTIALS: { status: 401, title: "The e-mail or password is wrong" },
  NOT_FOUND: { status: 404, title: "Not found" },
  METHOD_NOT_ALLOWED: { status: 405, title: "Method not allowed" },
  WRONG_REGION: { status: 421, title: "This deployment does not serve that region" },
  DUPLICATE_ENTITY: { status: 409, title: "An object with this key already exists" },
  CONFLICT: { status: 409, title: "The request conflicts with the current state" },
  PAYLOAD_TOO_LARGE: { status: 413, title: "The request body is too large" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: "Unsupported content type" },
  /** The AuthZEN routes' malformed requests: that specification asks for 400 where the API answers 422. */
  BAD_REQUEST: { status: 400, title: "Bad request" },
  PAGINATION_SIZE_OVERREACHED: { status: 422, title: "per_page is larger than allowed" },
  TOO_MANY_REQUESTS: { status: 429, title: "Rate limit exceeded" },
  TIMEOUT: { status: 504, title: "The operation timed out" },
  UNEXPECTED_ERROR: { status: 500, title: "Unexpected error" },
  SERVICE_UNAVAILABLE: { status: 503, title: "The service is not ready" },
} as const satisfies Record<string, { status: number; title: string }>;

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
