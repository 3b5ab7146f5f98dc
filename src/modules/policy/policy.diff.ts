import { canonicalPolicy, type PolicyDoc } from "./policy.format.ts";

/**
 * What applying a document would change, object by object, as a pure comparison of two documents in their
 * canonical shape. A resource created or deleted is one change (its parts go with it); inside a resource that
 * stays, each action, attribute, action group, role and relation is compared on its own.
 */
export type ChangeOp = "create" | "update" | "delete";
export type ObjectKind =
  | "resource"
  | "action"
  | "attribute"
  | "action_group"
  | "resource_role"
  | "relation"
  | "role"
  | "user_attribute"
  | "tenant_attribute"
  | "user_set"
  | "resource_set"
  | "set_rule"
  | "tenant"
  | "user"
  | "role_assignment"
  | "relationship_tuple";

export interface PolicyChange {
  op: ChangeOp;
  object: ObjectKind;
  /** the object's key; a resource's part is `resource:part`, a set rule `user_set -> resource:action -> resource_set` */
  key: string;
  /** the fields that differ (updates only) */
  fields?: string[];
}

type Plain = Record<string, unknown>;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function compareMaps(
  out: PolicyChange[],
  object: ObjectKind,
  prefix: string,
  before: Plain | undefined,
  after: Plain | undefined,
  skipFields: string[] = [],
): void {
  const b = before ?? {};
  const a = after ?? {};
  for (const key of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort()) {
    const name = prefix + key;
    if (!(key in b)) out.push({ op: "create", object, key: name });
    else if (!(key in a)) out.push({ op: "delete", object, key: name });
    else {
      const fields = changedFields(b[key] as Plain, a[key] as Plain, skipFields);
      if (fields.length > 0) out.push({ op: "update", object, key: name, fields });
    }
  }
}

function changedFields(before: Plain, after: Plain, skip: string[]): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((f) => !skip.includes(f) && !same(before[f], after[f]))
    .sort();
}

const RESOURCE_PARTS: [string, ObjectKind][] = [
  ["actions", "action"],
  ["attributes", "attribute"],
  ["action_groups", "action_group"],
  ["roles", "resource_role"],
  ["relations", "relation"],
];

export function diffPolicies(current: PolicyDoc, next: PolicyDoc): PolicyChange[] {
  const b = canonicalPolicy(current);
  const a = canonicalPolicy(next);
  const out: PolicyChange[] = [];
  const resourcesBefore = (b["resources"] ?? {}) as Record<string, Plain>;
  const resourcesAfter = (a["resources"] ?? {}) as Record<string, Plain>;
  const partFields = RESOURCE_PARTS.map(([field]) => field);
  compareMaps(out, "resource", "", resourcesBefore, resourcesAfter, partFields);
  for (const key of Object.keys(resourcesAfter).sort()) {
    const before = resourcesBefore[key];
    const after = resourcesAfter[key] as Plain;
    if (!before) continue;
    for (const [field, object] of RESOURCE_PARTS) {
      compareMaps(
        out,
        object,
        `${key}:`,
        before[field] as Plain | undefined,
        after[field] as Plain | undefined,
      );
    }
  }
  compareMaps(out, "role", "", b["roles"] as Plain, a["roles"] as Plain);
  compareMaps(out, "user_attribute", "", b["user_attributes"] as Plain, a["user_attributes"] as Plain);
  compareMaps(out, "tenant_attribute", "", b["tenant_attributes"] as Plain, a["tenant_attributes"] as Plain);
  compareMaps(out, "user_set", "", b["user_sets"] as Plain, a["user_sets"] as Plain);
  compareMaps(out, "resource_set", "", b["resource_sets"] as Plain, a["resource_sets"] as Plain);
  const ruleKey = (r: Plain) =>
    `${String(r["user_set"])} -> ${String(r["permission"])} -> ${String(r["resource_set"])}`;
  const rules = (doc: Plain) =>
    Object.fromEntries(((doc["set_rules"] ?? []) as Plain[]).map((r) => [ruleKey(r), {}]));
  compareMaps(out, "set_rule", "", rules(b), rules(a));
  return out;
}
