import readline from "node:readline";
import { Readable } from "node:stream";
import { AppError } from "../../../lib/errors.ts";

/** What `GET /v2/api-key/scope` answers: the organization, project and environment a key covers. */
export interface Scope {
  organization_id: string;
  project_id?: string;
  environment_id?: string;
}

/** The standalone PDP's HTTP client of the control plane: every request carries the PDP's key unless told another. */
export class ControlPlane {
  constructor(
    readonly url: string,
    private readonly key: string,
  ) {}

  async get<T>(pathAndQuery: string, key = this.key, timeoutMs = 10_000): Promise<T> {
    const res = await fetch(this.url + pathAndQuery, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) {
      const text = await res.text();
      throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status} ${text}`, text);
    }
    return (await res.json()) as T;
  }

  /**
   * A snapshot stream, fed line by line to `onLine` as it arrives; gives up when nothing arrives for
   * `idleMs` (a large environment takes a while in all, but never stalls).
   */
  async stream(
    pathAndQuery: string,
    onLine: (line: string) => Promise<void> | void,
    idleMs: number,
  ): Promise<void> {
    const controller = new AbortController();
    const idle = setTimeout(() => controller.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
    try {
      const res = await fetch(this.url + pathAndQuery, {
        headers: { authorization: `Bearer ${this.key}`, accept: "application/x-ndjson" },
        signal: controller.signal,
      });
      if (!res.ok || !res.body) {
        const text = await res.text();
        throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status} ${text}`, text);
      }
      const lines = readline.createInterface({
        input: Readable.fromWeb(res.body as import("node:stream/web").ReadableStream),
        crlfDelay: Infinity,
      });
      for await (const line of lines) {
        idle.refresh();
        await onLine(line);
      }
    } finally {
      clearTimeout(idle);
    }
  }

  /** `body` is JSON text, or its UTF-8 bytes. */
  async post(pathAndQuery: string, body: string | Uint8Array<ArrayBuffer>): Promise<void> {
    const res = await fetch(this.url + pathAndQuery, {
      method: "POST",
      headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) throw new ControlPlaneError(res.status, `${pathAndQuery}: ${res.status}`);
  }

  /**
   * Passes a request on with the caller's own credential and answers what the control plane answered, whatever its
   * status (the facts writes a standalone PDP receives).
   */
  async forward(
    method: string,
    pathAndQuery: string,
    authorization: string,
    body: unknown,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    const res = await fetch(this.url + pathAndQuery, {
      method,
      headers: { authorization, "content-type": "application/json" },
      ...(body !== undefined && { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => (headers[name] = value));
    return { status: res.status, headers, body: await res.text() };
  }
}

export class ControlPlaneError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The answer's body. */
    readonly body = "",
  ) {
    super(message);
  }

  /** A key of another region (421): the control plane's error, with the region's base URL. */
  get misdirected(): AppError | undefined {
    if (this.status !== 421) return undefined;
    try {
      const body = JSON.parse(this.body) as { message?: string; additional_info?: Record<string, unknown> };
      return new AppError(
        "WRONG_REGION",
        body.message ?? "the API key belongs to another region",
        body.additional_info,
      );
    } catch {
      return new AppError("WRONG_REGION", "the API key belongs to another region");
    }
  }
}
