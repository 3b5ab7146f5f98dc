import { readFile } from "node:fs/promises";
import { UsageError } from "./args.ts";

/** How the policy commands reach a server, and how they fail. */

export interface PolicyIo {
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}

/** A failure the command reports on standard error and exits 1 for. */
export class PolicyCommandError extends Error {}

/**
 * The API client of the policy commands: base URL, key and the environment's path, its policy routes' or (`pdp`)
 * its PDP check routes'.
 */
export function apiClient(
  values: { url?: string; "api-key"?: string; env?: string },
  env: NodeJS.ProcessEnv,
  routes: "policy" | "pdp" = "policy",
) {
  const base = (values.url ?? env["GATEHOUSE_URL"] ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
  const key = values["api-key"] ?? env["GATEHOUSE_API_KEY"];
  if (!key)
    throw new UsageError(
      "needs --api-key or GATEHOUSE_API_KEY (an environment, project or organization key)",
    );
  const target = values.env;
  const parts = target?.split("/") ?? [];
  if (parts.length !== 2 || !parts[0] || !parts[1]) throw new UsageError("needs --env PROJECT/ENVIRONMENT");
  const envPath = `${encodeURIComponent(parts[0])}/${encodeURIComponent(parts[1])}`;
  const path = routes === "pdp" ? `/v2/pdps/${envPath}` : `/v2/schema/${envPath}/policy`;
  return async <T>(method: string, suffix: string, body?: unknown): Promise<T> => {
    const res = await fetch(base + path + suffix, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    }).catch((e: unknown) => {
      const cause = (e as { cause?: { code?: string } }).cause;
      throw new PolicyCommandError(
        `cannot reach Gatehouse at ${base} (${cause?.code ?? String(cause ?? e)})`,
      );
    });
    const text = await res.text();
    let json: Record<string, unknown> = {};
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      throw new PolicyCommandError(`${method} ${path + suffix} answered ${res.status} without JSON`);
    }
    if (res.status >= 300) {
      const detail = (json["detail"] as { msg?: string }[] | undefined) ?? [];
      const lines = detail.length > 0 ? detail.map((d) => `  ${d.msg}`) : [];
      throw new PolicyCommandError(
        [
          `${res.status} ${String(json["error_code"] ?? "")}: ${String(json["message"] ?? text)}`,
          ...lines,
        ].join("\n"),
      );
    }
    return json as T;
  };
}

/** A file's text, or the command's error naming it. */
export async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    throw new PolicyCommandError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

/** A whole number from a flag, or a usage error. */
export function wholeNumber(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n)) throw new UsageError(`--${flag} needs a whole number`);
  return n;
}
