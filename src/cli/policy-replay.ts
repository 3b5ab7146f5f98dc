import { parse } from "yaml";
import type { ReplayCounts } from "../modules/policy/replay-tally.ts";
import { UsageError } from "./args.ts";
import { apiClient, PolicyCommandError, readText, wholeNumber, type PolicyIo } from "./policy-client.ts";

/**
 * `gatehouse policy replay [FILE] --env PROJ/ENV`: which of the environment's logged decisions (or a file of
 * checks) a draft would flip: the policy FILE (with `--revision`, a plan), or `--draft-env`'s policy. Exit 0 when
 * nothing flips, 2 when something does (as `plan`), 1 on an error.
 */

export interface ReplayFlags {
  env?: string;
  url?: string;
  "api-key"?: string;
  revision?: string;
  "draft-env"?: string;
  since?: string;
  from?: string;
  to?: string;
  checks?: string;
  limit?: string;
  format?: string;
}

/** The route's answer (what the CLI prints of it). */
type Replay = Pick<
  ReplayCounts,
  "replayed" | "flipped" | "by_resource_action" | "flips" | "flips_truncated"
> & {
  message: string;
};

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Unix seconds from "1767225600" or an ISO 8601 time. */
function seconds(flag: string, text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Date.parse(text) / 1000;
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} is Unix seconds or an ISO 8601 time`);
  return Math.floor(n);
}

function windowOf(values: ReplayFlags): { timestamp_from?: number; timestamp_to?: number } {
  const to = values.to === undefined ? undefined : seconds("to", values.to);
  if (values.since !== undefined) {
    if (values.from !== undefined) throw new UsageError("--since and --from both set the window's start");
    const m = /^(\d+)([smhd])$/.exec(values.since);
    if (!m) throw new UsageError("--since is a duration such as 90m, 24h or 7d");
    const end = to ?? Math.floor(Date.now() / 1000);
    return { timestamp_from: end - Number(m[1]) * UNITS[m[2]!]!, timestamp_to: end };
  }
  return {
    ...(values.from !== undefined && { timestamp_from: seconds("from", values.from) }),
    ...(to !== undefined && { timestamp_to: to }),
  };
}

const word = (allow: boolean) => (allow ? "allow" : "deny");

export function replayText(r: Replay): string {
  const lines: string[] = [];
  for (const f of r.flips) {
    const res = `${f.resource.type}${f.resource.key !== undefined ? `:${f.resource.key}` : ""}`;
    lines.push(
      `~ ${word(f.before.allow)} -> ${word(f.after.allow)}: ${f.user} ${f.action} ${res}${f.resource.tenant !== undefined ? ` in ${f.resource.tenant}` : ""}${f.timestamp ? ` (${f.timestamp})` : ""}`,
      `    before: ${f.before.reason}`,
      `    after:  ${f.after.reason}`,
    );
  }
  if (r.flips_truncated) lines.push(`  ... ${r.flipped - r.flips.length} more (--limit lists more)`);
  const groups = r.by_resource_action.filter((g) => g.flipped > 0);
  if (groups.length > 0) lines.push("By resource type and action:");
  for (const g of groups) {
    lines.push(
      `  ${g.resource_type} ${g.action}: ${g.flipped} of ${g.replayed} flip (${g.to_deny} -> deny, ${g.to_allow} -> allow)`,
    );
  }
  lines.push(`${r.message}.`);
  return `${lines.join("\n")}\n`;
}

export async function runPolicyReplay(
  file: string | undefined,
  values: ReplayFlags,
  io: PolicyIo,
): Promise<number> {
  const format = values.format ?? "text";
  if (!["text", "json"].includes(format)) throw new UsageError("--format is text or json");
  if ((file === undefined) === (values["draft-env"] === undefined)) {
    throw new UsageError("policy replay needs one of a policy FILE and --draft-env ENV");
  }
  const draft =
    file !== undefined
      ? {
          policy: await readText(file),
          ...(values.revision !== undefined && { revision: wholeNumber("revision", values.revision) }),
        }
      : { environment: values["draft-env"] };
  let checks: unknown;
  if (values.checks !== undefined) {
    try {
      checks = parse(await readText(values.checks));
    } catch (e) {
      if (e instanceof PolicyCommandError) throw e;
      throw new PolicyCommandError(`${values.checks} is not valid YAML`);
    }
    if (!Array.isArray(checks)) throw new PolicyCommandError(`${values.checks} must be a list of checks`);
  }
  const limit = values.limit === undefined ? undefined : wholeNumber("limit", values.limit);
  const call = apiClient(values, io.env);
  const result = await call<Replay>("POST", "/replay", {
    draft,
    ...windowOf(values),
    ...(checks !== undefined && { checks }),
    ...(limit !== undefined && { limit }),
  });
  io.out(format === "json" ? `${JSON.stringify(result, null, 2)}\n` : replayText(result));
  return result.flipped > 0 ? 2 : 0;
}
