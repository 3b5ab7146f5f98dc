import type { Db } from "../db/db.ts";
import { fromJson } from "../lib/json.ts";
import type { Change, MappingRuleData, ProxyConfigData } from "../pdp/engine/types.ts";

/** A stored mapping rule (proxy_configs.mapping_rules): the engine's fields and what only the proxy uses. */
export type StoredRule = MappingRuleData & { headers?: Record<string, string> };

export const storedRules = (json: string): StoredRule[] => fromJson<StoredRule[]>(json) ?? [];

/** The engine's view of a proxy config: its rules by keys, without headers (the one place it is made). */
export function proxyConfigData(key: string, rules: StoredRule[]): ProxyConfigData {
  return {
    key,
    mapping_rules: rules.map((r) => ({
      url: r.url,
      http_method: r.http_method,
      resource: r.resource,
      action: r.action,
      ...(r.priority !== undefined && r.priority !== null && { priority: r.priority }),
      ...(r.url_type === "regex" && { url_type: "regex" as const }),
    })),
  };
}

export const proxyConfigChange = (key: string, rules: StoredRule[]): Change => ({
  kind: "proxy_config",
  op: "upsert",
  data: proxyConfigData(key, rules),
});

/** The environment's proxy configs as rows (environment copy) in key order. */
export const proxyConfigRows = (db: Db, environmentId: string) =>
  db
    .selectFrom("proxy_configs")
    .selectAll()
    .where("environment_id", "=", environmentId)
    .orderBy("key")
    .execute();
