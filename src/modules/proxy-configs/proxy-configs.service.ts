import type { Kysely } from "kysely";
import { appendChanges } from "../../changes/feed.ts";
import type { Db } from "../../db/db.ts";
import type { Database } from "../../db/types.ts";
import { invalid, notFound } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { fromJson, toJson } from "../../lib/json.ts";
import { offsetOf, type PageRequest } from "../../lib/pagination.ts";
import { now } from "../../lib/time.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { insertUnique, scopeColumns } from "../../domain/schema/schema-rules.ts";
import { compileRuleRegex } from "../../pdp/engine/url-mapping.ts";
import { proxyConfigChange } from "../../domain/proxy-config-records.ts";
import {
  actionsByResource,
  deleteProxyConfig,
  findProxyConfig,
  insertProxyConfig,
  listProxyConfigs,
  updateProxyConfig,
  type ProxyConfigRow,
} from "./proxy-configs.repo.ts";
import type {
  MappingRule,
  MappingRuleUpdate,
  ProxyConfigCreate,
  ProxyConfigRead,
  ProxyConfigUpdate,
  StoredMappingRule,
} from "./proxy-configs.schemas.ts";

const PLACEHOLDER = /^\{[A-Za-z0-9_\-.]+\}$/;

/** 422 for a URL pattern the PDP could not match as written: a bad regex, a brace that is not a whole placeholder. */
function assertPattern(rule: MappingRule, loc: (string | number)[]): void {
  if (rule.url_type === "regex") {
    const re = compileRuleRegex(rule.url);
    if (re === null) throw invalid(`url '${rule.url}' is not a valid regex`, loc);
    if (re === "unsafe") {
      throw invalid(
        `url '${rule.url}' repeats a repetition (such as (a+)+), which can take minutes on some URLs; write it without nesting`,
        loc,
      );
    }
    return;
  }
  const [path = "", query] = rule.url.split("?", 2) as [string, string | undefined];
  const parts = [...path.split("/"), ...[...new URLSearchParams(query ?? "").values()]];
  for (const part of parts) {
    if (/[{}]/.test(part) && !PLACEHOLDER.test(part)) {
      throw invalid(
        `url '${rule.url}': a placeholder is a whole path segment or query value, such as {id}`,
        loc,
      );
    }
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(path.replace(/\{[^{}]*\}/g, "x"));
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw invalid(`url '${rule.url}' is not an absolute http(s) URL`, loc);
  }
}

/** The rules as stored: each checked, its action defaulted to its method (as Permit's PDP does). */
async function storedRules(db: Db, envId: string, rules: MappingRule[]): Promise<StoredMappingRule[]> {
  rules.forEach((rule, i) => assertPattern(rule, ["body", "mapping_rules", i, "url"]));
  const actions = await actionsByResource(db, envId, [...new Set(rules.map((r) => r.resource))]);
  return rules.map((rule) => {
    const action = rule.action ?? rule.http_method;
    const known = actions.get(rule.resource);
    if (!known) throw notFound("resource", rule.resource);
    if (!known.has(action)) throw notFound("action", `${rule.resource}:${action}`);
    return {
      url: rule.url,
      ...(rule.url_type === "regex" && { url_type: "regex" as const }),
      http_method: rule.http_method,
      resource: rule.resource,
      headers: rule.headers ?? {},
      action,
      ...(rule.priority !== undefined && { priority: rule.priority }),
    };
  });
}

const sameRule = (a: { http_method: string; url: string }, b: { http_method: string; url: string }) =>
  a.http_method === b.http_method && a.url === b.url;

/** Permit's update: a rule with should_delete removes the config's rule of that method and URL; others replace it. */
function mergedRules(current: StoredMappingRule[], updates: MappingRuleUpdate[]): MappingRule[] {
  let rules: MappingRule[] = current.map((r) => ({ ...r }));
  for (const { should_delete, ...rule } of updates) {
    rules = rules.filter((r) => !sameRule(r, rule));
    if (!should_delete) rules.push(rule);
  }
  return rules;
}

const rulesOf = (row: ProxyConfigRow) => (fromJson(row.mapping_rules) ?? []) as StoredMappingRule[];

function proxyConfigRead(row: ProxyConfigRow): ProxyConfigRead {
  return {
    key: row.key,
    id: row.id,
    organization_id: row.organization_id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    secret: fromJson(row.secret),
    name: row.name,
    mapping_rules: rulesOf(row),
    auth_mechanism: row.auth_mechanism as ProxyConfigRead["auth_mechanism"],
  };
}

export function createProxyConfigsService(deps: { db: Kysely<Database> }) {
  const { db } = deps;
  async function requireConfig(db: Db, envId: string, ref: string): Promise<ProxyConfigRow> {
    const row = await findProxyConfig(db, envId, ref);
    if (!row) throw notFound("proxy config", ref);
    return row;
  }
  return {
    async list({ environment }: EnvScope, page: PageRequest): Promise<ProxyConfigRead[]> {
      const rows = await listProxyConfigs(db, environment.id, offsetOf(page), page.perPage);
      return rows.map(proxyConfigRead);
    },

    async get({ environment }: EnvScope, ref: string): Promise<ProxyConfigRead> {
      return proxyConfigRead(await requireConfig(db, environment.id, ref));
    },

    async create(env: EnvScope, input: ProxyConfigCreate): Promise<ProxyConfigRead> {
      const envId = env.environment.id;
      return db.transaction().execute(async (trx) => {
        const rules = await storedRules(trx, envId, input.mapping_rules ?? []);
        const at = now();
        const row: ProxyConfigRow = {
          id: newId(),
          ...scopeColumns(env),
          key: input.key,
          name: input.name,
          secret: toJson(input.secret ?? null) ?? "null",
          auth_mechanism: input.auth_mechanism ?? "Bearer",
          mapping_rules: JSON.stringify(rules),
          created_at: at,
          updated_at: at,
        };
        await insertUnique("proxy config", input.key, () => insertProxyConfig(trx, row));
        await appendChanges(trx, envId, [proxyConfigChange(row.key, rules)]);
        return proxyConfigRead(row);
      });
    },

    async update({ environment }: EnvScope, ref: string, input: ProxyConfigUpdate): Promise<ProxyConfigRead> {
      return db.transaction().execute(async (trx) => {
        const current = await requireConfig(trx, environment.id, ref);
        const rules =
          input.mapping_rules === undefined
            ? rulesOf(current)
            : await storedRules(trx, environment.id, mergedRules(rulesOf(current), input.mapping_rules));
        const row = await updateProxyConfig(trx, current.id, {
          ...(input.name !== undefined && { name: input.name }),
          ...(input.secret !== undefined && { secret: toJson(input.secret) ?? "null" }),
          ...(input.auth_mechanism !== undefined && { auth_mechanism: input.auth_mechanism }),
          mapping_rules: JSON.stringify(rules),
          updated_at: now(),
        });
        if (input.mapping_rules !== undefined) {
          await appendChanges(trx, environment.id, [proxyConfigChange(row.key, rules)]);
        }
        return proxyConfigRead(row);
      });
    },

    async remove({ environment }: EnvScope, ref: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await requireConfig(trx, environment.id, ref);
        await deleteProxyConfig(trx, row.id);
        await appendChanges(trx, environment.id, [
          { kind: "proxy_config", op: "delete", data: { key: row.key } },
        ]);
      });
    },
  };
}
