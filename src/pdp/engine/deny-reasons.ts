// Deny reasons name the closest miss. They are only built once a check has already failed, so the allow path
// never pays for them. Names are quoted with ' (as the API's errors do): JSON needs no escape for it, so the
// decision log writes most messages as they are, without JSON.stringify.

import type { DerivationSearch } from "./derivation.ts";
import type { FactStore } from "./facts.ts";
import type { CompiledSchema } from "./schema.ts";
import type { DenyCode, DenyReason, ExpiredGrant } from "./types.ts";

export function deny(code: DenyCode, message: string): { allow: false; reason: DenyReason } {
  return { allow: false, reason: { kind: "deny", code, message } };
}

export interface MissedCheck {
  userKey: string;
  user: number | undefined;
  permission: number;
  tenant: number | undefined;
  tenantKey: string;
  /** -1 for a check on a resource type */
  instance: number;
}

function roleList(keys: string[]): string {
  return `role${keys.length === 1 ? "" : "s"} ${[...new Set(keys)].sort().join(", ")}`;
}

/** Explains why a check on a known resource type, action and instance found no grant. */
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
  if (tenantRoleKeys.length === 0 && instanceRoleKeys.length === 0) {
    const onInstance = instance < 0 ? "" : ` and no role on ${instanceName}`;
    const elsewhere = otherTenants.size === 0 ? "" : ` (has roles in ${[...otherTenants].sort().join(", ")})`;
    return deny(
      "NO_ROLE_IN_TENANT",
      `user '${missed.userKey}' has no role in tenant '${tenantKey}'${onInstance}${elsewhere}${abacNote}`,
    );
  }
  const held = [
    ...(tenantRoleKeys.length > 0 ? [`${roleList(tenantRoleKeys)} in tenant '${tenantKey}'`] : []),
    ...(instanceRoleKeys.length > 0 ? [`${roleList(instanceRoleKeys)} on ${instanceName}`] : []),
  ];
  const count = tenantRoleKeys.length + instanceRoleKeys.length;
  return deny(
    "NO_PERMISSION",
    `user '${missed.userKey}' has ${held.join(" and ")}, which ${count === 1 ? "lacks" : "lack"} ${permissionName}${abacNote}`,
  );
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
