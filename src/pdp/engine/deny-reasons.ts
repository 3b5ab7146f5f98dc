// Deny reasons name the closest miss. They are only built once a check has already failed, so the allow path
// never pays for them. Names are quoted with ' (as the API's errors do): JSON needs no escape for it, so the
// decision log writes most messages as they are, without JSON.stringify.

import type { DerivationSearch } from "./derivation.ts";
import type { FactStore } from "./facts.ts";
import type { CompiledSchema } from "./schema.ts";
import type { DenyCode, DenyReason, ExpiredGrant } from "./types.ts";

/** A deny without its reason worked out (listing walks only need the answer). */
export const NOT_ALLOWED = deny("NO_PERMISSION", "not allowed");

export function deny(code: DenyCode, message: string): { allow: false; reason: DenyReason } {
  return { allow: false, reason: { kind: "deny", code, message } };
}

export interface MissedCheck {
  userKey: string;
  user: number | undefined;
  permission: number;
  tenant: number | undefined;
  tenantKey: string;
  /** -1 for a check on a resource type or on an instance the engine does not hold */
  instance: number;
  /** "type:key" of a named instance the engine does not hold */
  missingInstance?: string;
}

function roleList(keys: string[]): string {
  return `role${keys.length === 1 ? "" : "s"} ${[...new Set(keys)].sort().join(", ")}`;
}

/**
 * Explains why a check on a known resource type and action found no grant. A check on an instance the engine does
 * not hold is UNKNOWN_INSTANCE once the user and tenant are known, with the tenant's closest miss in the message.
 */
export function explainMiss(
  facts: FactStore,
  schema: CompiledSchema,
  search: DerivationSearch,
  missed: MissedCheck,
): { allow: false; reason: DenyReason } {
  const permissionName = schema.permissionNames[missed.permission] as string;
  const abacNote =
    (schema.abacRules[missed.permission]?.length ?? 0) > 0
      ? `; no condition-set rule granting ${permissionName} matched`
      : "";
  const { user, tenant, tenantKey, instance } = missed;
  if (user === undefined || !facts.userExists(user)) {
    return deny("UNKNOWN_USER", `user '${missed.userKey}' is not known${abacNote}`);
  }
  if (tenant === undefined || !facts.tenantExists(tenant)) {
    return deny("UNKNOWN_TENANT", `tenant '${tenantKey}' does not exist${abacNote}`);
  }
  const tenantRoleKeys: string[] = [];
  const otherTenants = new Set<string>();
  const assigned = facts.userTenantRoles[user] ?? [];
  for (let i = 0; i < assigned.length; i += 2) {
    if (assigned[i] === tenant) tenantRoleKeys.push(facts.roleKey(assigned[i + 1] as number));
    else otherTenants.add(facts.tenants.keyOf(assigned[i] as number));
  }
  const instanceRoleKeys =
    instance < 0 ? [] : search.grantedRoles(user, instance, tenant).map((role) => facts.roleKey(role));
  const instanceName = instance < 0 ? "" : facts.instanceName(instance);
  let code: DenyCode;
  let detail: string;
  if (tenantRoleKeys.length === 0 && instanceRoleKeys.length === 0) {
    const onInstance = instance < 0 ? "" : ` and no role on ${instanceName}`;
    const elsewhere = otherTenants.size === 0 ? "" : ` (has roles in ${[...otherTenants].sort().join(", ")})`;
    code = "NO_ROLE_IN_TENANT";
    detail = `user '${missed.userKey}' has no role in tenant '${tenantKey}'${onInstance}${elsewhere}`;
  } else {
    const held = [
      ...(tenantRoleKeys.length > 0 ? [`${roleList(tenantRoleKeys)} in tenant '${tenantKey}'`] : []),
      ...(instanceRoleKeys.length > 0 ? [`${roleList(instanceRoleKeys)} on ${instanceName}`] : []),
    ];
    const count = tenantRoleKeys.length + instanceRoleKeys.length;
    code = "NO_PERMISSION";
    detail = `user '${missed.userKey}' has ${held.join(" and ")}, which ${count === 1 ? "lacks" : "lack"} ${permissionName}`;
  }
  if (missed.missingInstance !== undefined) {
    return deny(
      "UNKNOWN_INSTANCE",
      `resource instance '${missed.missingInstance}' does not exist, so only tenant roles and condition-set rules apply: ${detail}${abacNote}`,
    );
  }
  return deny(code, `${detail}${abacNote}`);
}

/** Adds to a deny the grants that would have allowed it had they not expired, in `expired` and in the message. */
export function withExpiredGrants(
  decision: { allow: false; reason: DenyReason },
  expired: ExpiredGrant[],
): { allow: false; reason: DenyReason } {
  const notes = expired.map(
    (g) =>
      `role ${g.role} ${g.resource_instance ? `on ${g.resource_instance}` : `in tenant '${g.tenant}'`} expired at ${g.expired_at}`,
  );
  const { code, message } = decision.reason;
  return {
    allow: false,
    reason: { kind: "deny", code, message: `${message}; ${notes.join(", ")}`, expired },
  };
}
