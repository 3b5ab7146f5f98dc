import type { Reason } from "./types.ts";

/** One line a person can read: the grant path of an allow, the closest miss of a deny. */
export function describeReason(reason: unknown): string | undefined {
  const r = reason as Reason | null | undefined;
  if (!r || typeof r !== "object" || !("kind" in r)) return undefined;
  switch (r.kind) {
    case "rbac":
      return `allowed by role '${r.role}' in tenant '${r.tenant}'`;
    case "rebac": {
      const chain = r.via.map((hop) => `'${hop.role}' on ${hop.instance} via '${hop.relation}'`).join(" -> ");
      return `allowed by role '${r.role}' on ${r.instance}${chain ? `, derived from ${chain}` : ""}`;
    }
    case "abac":
      return `allowed by condition set rule: user set '${r.user_set}' on resource set '${r.resource_set}'`;
    case "deny":
      return `denied (${r.code}): ${r.message}`;
    default:
      return undefined;
  }
}
