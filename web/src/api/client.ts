import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./openapi";

/** The API's error body (every non-2xx answer of /v2). */
export interface ErrorBody {
  error_code?: string;
  title?: string;
  message?: string;
  additional_info?: Record<string, unknown>;
  /** A 422's problems, each at its location (`["body", "key"]`). */
  detail?: { loc?: (string | number)[]; msg?: string }[];
}

/** A failed call, with the API's title and message for the page to show. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
    readonly code?: string,
    /** A 429's wait before the same call can succeed, in seconds (its Retry-After). */
    readonly retryAfter?: number,
    /** A 422's messages by the body field they are about (`key`, `name`), for the form to show at that field. */
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
    this.retryAt = retryAfter === undefined ? undefined : Date.now() + retryAfter * 1000;
  }

  /** When the wait of a 429 ends (a time in ms). */
  readonly retryAt: number | undefined;
}

let csrfToken: string | undefined;

/** The session's CSRF token, sent with every write (POST /v2/auth/login and GET /v2/auth/session return it). */
export function setCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (request.method !== "GET" && csrfToken) request.headers.set("X-CSRF-Token", csrfToken);
    return request;
  },
};

let sessionEnded: (() => void) | undefined;
/** 401s that answer a login attempt, not a session that ended. */
const LOGIN_ANSWERS = new Set(["INVALID_CREDENTIALS", "TWO_FACTOR_REQUIRED", "INVALID_TWO_FACTOR_CODE"]);

/** Called on any 401 but a login's answer: the session is missing, expired or ended (main.tsx goes to login). */
export function onSessionEnded(listener: () => void): void {
  sessionEnded = listener;
}

// Every call passes here, so no page can be left showing a 401 with write buttons that cannot work.
const session: Middleware = {
  async onResponse({ response }) {
    if (response.status !== 401) return response;
    const body = (await response
      .clone()
      .json()
      .catch(() => ({}))) as ErrorBody;
    if (!LOGIN_ANSWERS.has(body.error_code ?? "")) sessionEnded?.();
    return response;
  },
};

/** The typed client of docs/openapi.json: the dashboard calls nothing else. */
export const api = createClient<paths>({ baseUrl: "", credentials: "same-origin" });
api.use(csrf, session);

/** Retry-After in seconds (it may also be an HTTP date), else the body's `retry_after_seconds`. */
function retryAfterOf(response: Response, body: ErrorBody): number | undefined {
  const header = response.headers.get("retry-after");
  if (header !== null) {
    const seconds = /^\d+$/.test(header.trim())
      ? Number(header)
      : Math.ceil((Date.parse(header) - Date.now()) / 1000);
    if (Number.isFinite(seconds)) return Math.max(0, seconds);
  }
  const info = body.additional_info?.["retry_after_seconds"];
  return typeof info === "number" ? info : undefined;
}

/** A 422's problems by the top-level body field they name. */
function fieldsOf(body: ErrorBody): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const { loc, msg } of body.detail ?? []) {
    const field = loc?.[0] === "body" ? loc[1] : undefined;
    if (typeof field === "string" && msg && !(field in fields)) fields[field] = msg;
  }
  return fields;
}

/** The data of an openapi-fetch answer, or an ApiError with the API's title and message. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  const body = (result.error ?? {}) as ErrorBody;
  throw new ApiError(
    result.response.status,
    body.title ?? result.response.statusText ?? "Request failed",
    body.message ?? `HTTP ${result.response.status}`,
    body.error_code,
    result.response.status === 429 ? retryAfterOf(result.response, body) : undefined,
    fieldsOf(body),
  );
}
