import { readFile, writeFile } from "node:fs/promises";
import { takeFlags, UsageError } from "./args.ts";

/**
 * `gatehouse policy export|plan|apply`: an environment's policy as a file, through a running server's API (so an
 * environment key is enough). Exit codes as `terraform plan -detailed-exitcode`: 0 no change, 2 changes (plan),
 * 1 an error of any kind, so that CI can gate on them.
 */

const FLAGS = ["env", "url", "api-key", "out", "revision", "policy", "format"] as const;

export interface PolicyIo {
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}

interface Change {
  op: string;
  object: string;
  key: string;
  fields?: string[];
}
interface Plan {
  revision: number;
  changes: Change[];
  dangerous: { object: string; key: string; reason: string }[];
  summary: { create: number; update: number; delete: number };
}

/** A failure the command reports on standard error and exits 1 for. */
export class PolicyCommandError extends Error {}

export function changeLine(c: Change): string {
  const sign = c.op === "create" ? "+" : c.op === "delete" ? "-" : "~";
  return `${sign} ${c.object} ${c.key}${c.fields ? ` (${c.fields.join(", ")})` : ""}`;
}

export function planText(plan: Plan): string {
  const lines = plan.changes.map(changeLine);
  for (const d of plan.dangerous) lines.push(`! dangerous: ${d.object} ${d.key}: ${d.reason}`);
  const s = plan.summary;
  lines.push(
    plan.changes.length === 0
      ? `No changes: the environment holds this policy (revision ${plan.revision}).`
      : `Plan: ${s.create} to create, ${s.update} to change, ${s.delete} to delete (revision ${plan.revision}).`,
  );
  return `${lines.join("\n")}\n`;
}

/** The API client of the policy commands: base URL, key and the environment's path. */
export function apiClient(
  values: { url?: string; "api-key"?: string; env?: string },
  env: NodeJS.ProcessEnv,
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
  const path = `/v2/schema/${encodeURIComponent(parts[0])}/${encodeURIComponent(parts[1])}/policy`;
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

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    throw new PolicyCommandError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

export async function policyCommand(argv: string[], io: PolicyIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (e) {
    if (e instanceof PolicyCommandError || e instanceof UsageError) {
      io.err(`gatehouse policy: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

async function run(argv: string[], io: PolicyIo): Promise<number> {
  const [action, ...args] = argv;
  const { values, rest } = takeFlags(args, FLAGS);
  const [file, ...extra] = rest;
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const call = apiClient(values, io.env);
  if (action === "export") {
    const res = await call<{ policy: string }>("GET", "");
    if (values.out) await writeFile(values.out, res.policy);
    else io.out(res.policy);
    return 0;
  }
  if (action !== "plan" && action !== "apply") {
    throw new UsageError("policy needs export, plan or apply");
  }
  if (!file) throw new UsageError(`policy ${action} needs a FILE`);
  const policy = await readText(file);
  if (action === "plan") {
    const plan = await call<Plan>("POST", "/plan", { policy });
    io.out(planText(plan));
    return plan.changes.length === 0 ? 0 : 2;
  }
  let revision: number;
  if (values.revision !== undefined) {
    revision = Number(values.revision);
    if (!Number.isInteger(revision) || revision < 0) throw new UsageError("--revision needs a whole number");
  } else {
    const plan = await call<Plan>("POST", "/plan", { policy });
    io.out(planText(plan));
    revision = plan.revision;
  }
  const applied = await call<{ revision: number; changes: Change[] }>("POST", "/apply", { policy, revision });
  io.out(
    applied.changes.length === 0
      ? `Nothing to apply (revision ${applied.revision}).\n`
      : `Applied ${applied.changes.length} change(s) as revision ${applied.revision}.\n`,
  );
  return 0;
}
