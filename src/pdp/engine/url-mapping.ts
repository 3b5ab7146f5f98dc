// Permit's URL mapping rules (its PDP's mapping_rules_utils.py): a request's method and URL pick the rule that
// names the resource type and action a check is then made on; `{placeholders}` and a regex's named groups become
// the resource's attributes.

import safeRegex from "safe-regex2";
import type { MappingRuleData } from "./types.ts";

export interface UrlMatch {
  rule: MappingRuleData;
  attributes: Record<string, string>;
}

const PLACEHOLDER = /^\{[^{}]*\}$/;
const compiled = new WeakMap<MappingRuleData, RegExp | null>();

/**
 * A rule's regex as JavaScript reads it: Python's `(?P<name>` is `(?<name>`; sticky, so it matches from the
 * URL's start as Python's `re.match` does. Null for a pattern that does not compile, "unsafe" for one whose
 * nested repetition (such as `(a+)+`) can backtrack for minutes on a crafted URL: the API refuses those, and a PDP
 * never runs one that came another way.
 */
export function compileRuleRegex(pattern: string): RegExp | "unsafe" | null {
  let re: RegExp;
  try {
    re = new RegExp(pattern.replace(/\(\?P</g, "(?<"), "y");
  } catch {
    return null;
  }
  return safeRegex(re) ? re : "unsafe";
}

function regexOf(rule: MappingRuleData): RegExp | null {
  let re = compiled.get(rule);
  if (re === undefined) {
    const compiledRe = compileRuleRegex(rule.url);
    re = compiledRe instanceof RegExp ? compiledRe : null;
    compiled.set(rule, re);
  }
  return re;
}

function splitQuery(url: string): [path: string, query: string | undefined] {
  const at = url.indexOf("?");
  return at === -1 ? [url, undefined] : [url.slice(0, at), url.slice(at + 1)];
}

/** The placeholders' values when `url` matches the rule's path and query pattern, else undefined. */
function matchPattern(pattern: string, url: string): Record<string, string> | undefined {
  const [rulePath, ruleQuery] = splitQuery(pattern);
  const [path, query] = splitQuery(url);
  const ruleParts = rulePath.split("/");
  const parts = path.split("/");
  if (ruleParts.length !== parts.length) return undefined;
  const attributes: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const rulePart = ruleParts[i] as string;
    if (PLACEHOLDER.test(rulePart)) attributes[rulePart.slice(1, -1)] = parts[i] as string;
    else if (rulePart !== parts[i]) return undefined;
  }
  if (ruleQuery === undefined) return attributes;
  if (query === undefined) return undefined;
  const wanted = new URLSearchParams(ruleQuery);
  const given = new URLSearchParams(query);
  for (const [name, value] of wanted) {
    const actual = given.get(name);
    if (actual === null) return undefined;
    if (PLACEHOLDER.test(value)) attributes[value.slice(1, -1)] = actual;
    else if (value !== actual) return undefined;
  }
  return attributes;
}

function matchRule(rule: MappingRuleData, url: string): Record<string, string> | undefined {
  if (rule.url_type !== "regex") return matchPattern(rule.url, url);
  const re = regexOf(rule);
  if (re === null) return undefined;
  re.lastIndex = 0;
  const m = re.exec(url);
  if (m === null) return undefined;
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.groups ?? {}))
    if (value !== undefined) attributes[name] = value;
  // A regex's query placeholders are read as a pattern's are.
  return { ...attributes, ...queryAttributes(rule.url, url) };
}

function queryAttributes(pattern: string, url: string): Record<string, string> {
  const [, ruleQuery] = splitQuery(pattern);
  const [, query] = splitQuery(url);
  if (ruleQuery === undefined || query === undefined) return {};
  const given = new URLSearchParams(query);
  const out: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(ruleQuery)) {
    const actual = given.get(name);
    if (PLACEHOLDER.test(value) && actual !== null) out[value.slice(1, -1)] = actual;
  }
  return out;
}

/** The matching rule of highest priority (the first given among equals), with the URL's attributes. */
export function matchUrl(
  rules: Iterable<MappingRuleData>,
  method: string,
  url: string,
): UrlMatch | undefined {
  const wanted = method.toLowerCase();
  let best: UrlMatch | undefined;
  for (const rule of rules) {
    if (rule.http_method !== wanted) continue;
    if (best !== undefined && (rule.priority ?? 0) <= (best.rule.priority ?? 0)) continue;
    const attributes = matchRule(rule, url);
    if (attributes !== undefined) best = { rule, attributes };
  }
  return best;
}
