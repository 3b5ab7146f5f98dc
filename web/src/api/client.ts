import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./openapi";

/** The API's error body (every non-2xx answer of /v2). */
export interface ErrorBody {
  error_code?: string;
  title?: string;
  message?: string;
}

/** A failed call, with the API's title and message for the page to show. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
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

/** The typed client of docs/openapi.json: the dashboard calls nothing else. */
export const api = createClient<paths>({ baseUrl: "", credentials: "same-origin" });
api.use(csrf);

/** The data of an openapi-fetch answer, or an ApiError with the API's title and message. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  const body = (result.error ?? {}) as ErrorBody;
  throw new ApiError(
    result.response.status,
    body.title ?? result.response.statusText ?? "Request failed",
    body.message ?? `HTTP ${result.response.status}`,
    body.error_code,
  );
}
