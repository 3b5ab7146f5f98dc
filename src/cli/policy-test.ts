import { parse } from "yaml";
import { createEngine } from "../pdp/engine/index.ts";
import type { Change, CheckQuery, Decision, EnvironmentData } from "../pdp/engine/types.ts";
import { engineDataFromPolicy } from "../modules/policy/policy.engine.ts";
import { parsePolicy } from "../modules/policy/policy.format.ts";
import { UsageError } from "./args.ts";
import { apiClient, PolicyCommandError, readText, type PolicyIo } from "./policy-client.ts";

/**
 * `gatehouse policy test TESTS`: the cases of a test file checked in process on the PDP engine, built from a policy
 * file (`--policy`) plus the test file's own facts; or (`--env`) through a live environment's PDP, on its facts.
 */

interface TestCase {
  name: string;
  query: CheckQuery;
  allow: boolean;
  reason?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (v: unknown, what: string): unknown[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new PolicyCommandError(`${what} must be a list`);
  return v;
};

/** Facts in the engine's own shapes (docs/policy-as-code.md). */
function factsOf(facts: unknown): Change[] {
  if (facts === undefined || facts === null) return [];
  if (!isObj(facts)) throw new PolicyCommandError("facts must be a map");
  const kinds = [
    ["tenants", "tenant"],
    ["users", "user"],
    ["resource_instances", "resource_instance"],
    ["relationship_tuples", "relationship_tuple"],
    ["role_assignments", "role_assignment"],
  ] as const;
  const out: Change[] = [];
  for (const [field, kind] of kinds) {
    list(facts[field], `facts.${field}`).forEach((item, i) => {
      if (!isObj(item)) throw new PolicyCommandError(`facts.${field}[${i}] must be a map`);
      const data =
        kind === "role_assignment" || kind === "relationship_tuple" ? { tenant: "default", ...item } : item;
      out.push({ kind, op: "upsert", data } as unknown as Change);
    });
  }
  for (const key of Object.keys(facts)) {
    if (!kinds.some(([field]) => field === key)) throw new PolicyCommandError(`facts.${key}: unknown field`);
  }
  return out;
}

function casesOf(cases: unknown): TestCase[] {
  return list(cases, "cases").map((c, i) => {
    const where = `cases[${i}]`;
    if (!isObj(c)) throw new PolicyCommandError(`${where} must be a map`);
    const user = typeof c["user"] === "string" ? { key: c["user"] } : c["user"];
    if (!isObj(user) || typeof user["key"] !== "string")
      throw new PolicyCommandError(`${where}.user needs a key`);
    let resource = c["resource"];
    if (typeof resource === "string") {
      const [type, key] = resource.split(":");
      resource = { type, ...(key && { key }) };
    }
    if (!isObj(resource) || typeof resource["type"] !== "string") {
      throw new PolicyCommandError(`${where}.resource needs a type ("type" or "type:key")`);
    }
    const tenant = c["tenant"] ?? resource["tenant"] ?? "default";
    if (typeof c["action"] !== "string") throw new PolicyCommandError(`${where}.action must be a string`);
    if (typeof c["allow"] !== "boolean") throw new PolicyCommandError(`${where}.allow must be true or false`);
    const name =
      typeof c["name"] === "string" ? c["name"] : `${user["key"]} ${c["action"]} ${String(resource["type"])}`;
    return {
      name,
      query: {
        user: user as unknown as CheckQuery["user"],
        action: c["action"],
        resource: { ...(resource as unknown as CheckQuery["resource"]), tenant: String(tenant) },
        ...(isObj(c["context"]) && { context: c["context"] }),
      },
      allow: c["allow"],
      ...(typeof c["reason"] === "string" && { reason: c["reason"] }),
    };
  });
}

interface Result {
  case: TestCase;
  decision: Decision;
  failure?: string;
}

function judge(test: TestCase, decision: Decision): Result {
  const problems: string[] = [];
  if (decision.allow !== test.allow)
    problems.push(`expected ${test.allow ? "allow" : "deny"}, got ${decision.allow ? "allow" : "deny"}`);
  const kind = decision.reason.kind === "deny" ? decision.reason.code : decision.reason.kind;
  if (test.reason !== undefined && test.reason !== kind && test.reason !== decision.reason.kind) {
    problems.push(`expected reason ${test.reason}, got ${kind}`);
  }
  return { case: test, decision, ...(problems.length > 0 && { failure: problems.join("; ") }) };
}

const explain = (d: Decision) => JSON.stringify(d.reason);
const xml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function report(results: Result[], format: string, file: string): string {
  const failed = results.filter((r) => r.failure);
  if (format === "tap") {
    const lines = ["TAP version 13", `1..${results.length}`];
    results.forEach((r, i) => {
      lines.push(`${r.failure ? "not ok" : "ok"} ${i + 1} - ${r.case.name}`);
      if (r.failure)
        lines.push(
          "  ---",
          `  message: ${JSON.stringify(r.failure)}`,
          `  decision: ${explain(r.decision)}`,
          "  ...",
        );
    });
    return `${lines.join("\n")}\n`;
  }
  if (format === "junit") {
    const cases = results.map((r) =>
      r.failure
        ? `    <testcase name="${xml(r.case.name)}" classname="${xml(file)}"><failure message="${xml(r.failure)}">${xml(explain(r.decision))}</failure></testcase>`
        : `    <testcase name="${xml(r.case.name)}" classname="${xml(file)}"/>`,
    );
    return [
      '<?xml version="1.0" encoding="UTF-8"?>',
      `<testsuites tests="${results.length}" failures="${failed.length}">`,
      `  <testsuite name="${xml(file)}" tests="${results.length}" failures="${failed.length}">`,
      ...cases,
      "  </testsuite>",
      "</testsuites>",
      "",
    ].join("\n");
  }
  const lines = failed.map((r) => `FAIL ${r.case.name}: ${r.failure}\n     decision: ${explain(r.decision)}`);
  lines.push(`${results.length - failed.length} passed, ${failed.length} failed`);
  return `${lines.join("\n")}\n`;
}

/** A test file's facts (as engine changes) and cases. */
function parseTests(testText: string): { facts: Change[]; cases: TestCase[] } {
  let tests: unknown;
  try {
    tests = parse(testText);
  } catch (e) {
    throw new PolicyCommandError(
      `the test file is not valid YAML: ${e instanceof Error ? e.message.split("\n")[0] : ""}`,
    );
  }
  if (!isObj(tests)) throw new PolicyCommandError("the test file must be a map with cases (and facts)");
  return { facts: factsOf(tests["facts"]), cases: casesOf(tests["cases"]) };
}

/** Runs a test file's cases against policy data, in process; pure apart from the caller's I/O. */
export function runCases(policy: EnvironmentData, testText: string): Result[] {
  const { facts, cases } = parseTests(testText);
  const engine = createEngine(policy);
  for (const change of facts) engine.apply(change);
  return cases.map((c) => judge(c, engine.check(c.query)));
}

/** Checks per request to the environment's PDP (its bulk route's limit). */
const PDP_BATCH = 1000;

/**
 * Runs the cases through the environment's PDP (`/allowed/bulk` of the control plane), on the environment's own
 * facts: a test file with facts is refused, since checking them would mean writing them into the environment.
 */
async function runCasesOnPdp(
  values: { env?: string; url?: string; "api-key"?: string },
  testText: string,
  io: PolicyIo,
): Promise<Result[]> {
  const { facts, cases } = parseTests(testText);
  if (facts.length > 0) {
    throw new PolicyCommandError(
      "with --env the cases run through the environment's PDP on its own facts, and the test file has facts: " +
        "test with --policy FILE (in process, with the file's facts), or seed the facts into a test environment",
    );
  }
  const call = apiClient(values, io.env, "pdp");
  const results: Result[] = [];
  for (let at = 0; at < cases.length; at += PDP_BATCH) {
    const batch = cases.slice(at, at + PDP_BATCH);
    const answer = await call<{ allow: Decision[] }>(
      "POST",
      "/allowed/bulk",
      batch.map((c) => c.query),
    );
    batch.forEach((c, i) => {
      const d = answer.allow[i];
      if (!d) throw new PolicyCommandError("the PDP answered fewer decisions than it was asked");
      results.push(judge(c, { allow: d.allow, reason: d.reason } as Decision));
    });
  }
  return results;
}

function policyData(text: string): EnvironmentData {
  try {
    return engineDataFromPolicy(parsePolicy(text));
  } catch (e) {
    const detail = (e as { detail?: { msg: string }[] }).detail;
    throw new PolicyCommandError(
      `the policy is invalid:\n${(detail ?? []).map((d) => `  ${d.msg}`).join("\n") || String(e)}`,
    );
  }
}

export async function runPolicyTests(
  file: string,
  values: { policy?: string; env?: string; url?: string; "api-key"?: string; format?: string },
  io: PolicyIo,
): Promise<number> {
  const format = values.format ?? "text";
  if (!["text", "junit", "tap"].includes(format)) throw new UsageError("--format is text, junit or tap");
  if ((values.policy === undefined) === (values.env === undefined)) {
    throw new UsageError("policy test needs one of --policy FILE and --env PROJECT/ENV");
  }
  const results =
    values.policy === undefined
      ? await runCasesOnPdp(values, await readText(file), io)
      : runCases(policyData(await readText(values.policy)), await readText(file));
  io.out(report(results, format, file));
  return results.some((r) => r.failure) ? 1 : 0;
}
