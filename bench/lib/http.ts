export interface Reply {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  headers: Headers;
}

/** A small JSON client for the control plane and the PDP. Non-2xx answers throw unless `allowStatus` names them. */
export class Api {
  constructor(
    readonly base: string,
    public key: string,
  ) {}

  async call(
    method: string,
    path: string,
    body?: unknown,
    options: { headers?: Record<string, string>; allowStatus?: number[]; timeoutMs?: number } = {},
  ): Promise<Reply> {
    const res = await fetch(this.base + path, {
      method,
      headers: {
        authorization: `Bearer ${this.key}`,
        ...(body !== undefined && { "content-type": "application/json" }),
        ...options.headers,
      },
      ...(body !== undefined && { body: typeof body === "string" ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
    });
    const text = await res.text();
    if (!res.ok && !(options.allowStatus ?? []).includes(res.status)) {
      throw new Error(`${method} ${path} -> ${res.status} ${text.slice(0, 500)}`);
    }
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json, headers: res.headers };
  }
}

/** Runs `fn` over `items` with at most `concurrency` calls in flight; the first failure rejects. */
export async function pool<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed: unknown;
  const worker = async () => {
    while (failed === undefined) {
      const i = next++;
      if (i >= items.length) return;
      try {
        out[i] = await fn(items[i] as T, i);
      } catch (e) {
        failed ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failed !== undefined) throw failed;
  return out;
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Percentile (0-100) of an unsorted list, nearest rank. */
export function percentile(values: readonly number[], percent: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** A table row of milliseconds: the name, then p50, p90, p99 and max of `xs`. */
export const latencyRow = (name: string, xs: readonly number[]) => [
  name,
  ...[50, 90, 99].map((percent) => `${percentile(xs, percent).toFixed(1)} ms`),
  `${Math.max(...xs).toFixed(1)} ms`,
];
