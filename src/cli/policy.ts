import { writeFile } from "node:fs/promises";
import { takeFlags, UsageError } from "./args.ts";
import { apiClient, PolicyCommandError, readText, wholeNumber, type PolicyIo } from "./policy-client.ts";

/**
 * `gatehouse policy export|plan|apply`: an environment's policy as a file, through a running server's API (so an
 * environment key is enough). Exit codes as `terraform plan -detailed-exitcode`: 0 no change, 2 changes (plan),
 * 1 an error of any kind, so that CI can gate on them.
 */

const FLAGS = [
  "env",
  "url",
  "api-key",
  "out",
  "revision",
  "policy",
  "format",
  "replan",
  "draft-env",
  "since",
  "from",
  "to",
  "checks",
  "limit",
  "with-facts",
] as const;

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
  const { values, rest } = takeFlags(args, FLAGS, ["replan", "with-facts"]);
  const [file, ...extra] = rest;
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  if (action === "test") {
    if (!file) throw new UsageError("policy test needs a TESTS file");
    const { runPolicyTests } = await import("./policy-test.ts");
    return runPolicyTests(file, values, io);
  }
  if (action === "replay") {
    const { runPolicyReplay } = await import("./policy-replay.ts");
    return runPolicyReplay(file, values, io);
  }
  const call = apiClient(values, io.env);
  if (action === "export") {
    const withFacts = values["with-facts"] !== undefined && values["with-facts"] !== "false";
    const res = await call<{ policy: string }>("GET", withFacts ? "?with_facts=true" : "");
    if (values.out) await writeFile(values.out, res.policy);
    else io.out(res.policy);
    return 0;
  }
  if (action !== "plan" && action !== "apply") {
    throw new UsageError("policy needs export, plan, apply, test or replay");
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
    revision = wholeNumber("revision", values.revision);
  } else {
    const plan = await call<Plan>("POST", "/plan", { policy });
    io.out(planText(plan));
    revision = plan.revision;
  }
  const replan = values.replan !== undefined && values.replan !== "false";
  const applied = await call<{ revision: number; changes: Change[]; replanned?: boolean }>("POST", "/apply", {
    policy,
    revision,
    ...(replan && { replan }),
  });
  if (applied.replanned) {
    io.out(`The environment changed since revision ${revision}: planned again and applied:\n`);
    io.out(`${applied.changes.map(changeLine).join("\n")}\n`);
  }
  io.out(
    applied.changes.length === 0
      ? `Nothing to apply (revision ${applied.revision}).\n`
      : `Applied ${applied.changes.length} change(s) as revision ${applied.revision}.\n`,
  );
  return 0;
}
