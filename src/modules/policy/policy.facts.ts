import type { Db } from "../../db/db.ts";
import { Resolver, tenantChange } from "../../domain/facts/facts-write.ts";
import { createTenantRecords } from "../../domain/facts/tenant-records.ts";
import { assignRoles } from "../../domain/facts/role-assignment-records.ts";
import { createUserRecord, replaceUserRecord } from "../../domain/facts/user-records.ts";
import { createTupleRecords } from "../../domain/facts/tuple-records.ts";
import { tuplesJoined } from "../../domain/facts/tuples.repo.ts";
import { assignmentsJoined } from "../../domain/facts/role-assignments.repo.ts";
import type { EnvScope } from "../../domain/path-scope.ts";
import { AppError } from "../../lib/errors.ts";
import { fromJsonObject } from "../../lib/json.ts";
import { namedPatch } from "../../lib/patch.ts";
import { KEY_PATTERN } from "../../lib/schemas.ts";
import { USER_KEY_PATTERN } from "../../domain/facts/facts.schemas.ts";
import type { Change } from "../../pdp/engine/types.ts";
import { updateTenant } from "../tenants/tenants.repo.ts";
import type { PolicyChange } from "./policy.diff.ts";
import {
  canonical,
  opt,
  policyInvalid,
  readDocument,
  Reader,
  type Json,
  type Where,
} from "./policy.format.ts";

/**
 * The policy file's optional `facts:` section, which seeds an environment: tenants, users and role assignments in
 * the shapes of a policy test file's facts. Applying it creates what is missing and updates what differs; facts
 * the file leaves out stay (seeding is additive). Writes go through the facts API's own domain functions.
 */

type Attributes = Record<string, Json>;
export interface TenantFact {
  key: string;
  name: string;
  description?: string;
  attributes?: Attributes;
}
export interface UserFact {
  key: string;
  email?: string;
  first_name?: string;
  last_name?: string;
  attributes?: Attributes;
}
export interface AssignmentFact {
  user: string;
  role: string;
  tenant: string;
  resource_instance?: string;
}
export interface TupleFact {
  subject: string;
  relation: string;
  object: string;
  tenant: string;
}
export interface FactsDoc {
  tenants: TenantFact[];
  users: UserFact[];
  role_assignments: AssignmentFact[];
  relationship_tuples: TupleFact[];
}

const SECTIONS = ["tenants", "users", "role_assignments", "relationship_tuples"] as const;
type Path = (string | number)[];

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const assignmentKey = (a: AssignmentFact) =>
  [a.user, a.role, a.tenant, ...(a.resource_instance ? [a.resource_instance] : [])].join(":");
const tupleKey = (t: TupleFact) => `${t.subject} ${t.relation} ${t.object}`;

/** Drops what is undefined or empty, so that a fact prints and compares in one shape. */
function plain(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || v === null) continue;
    if (typeof v === "object" && Object.keys(v).length === 0) continue;
    out[k] = typeof v === "object" ? canonical(v as Json) : v;
  }
  return out;
}

/** The section in its canonical shape: each list sorted by key, empty fields left out; undefined when empty. */
export function canonicalFacts(f: FactsDoc): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  const tenants = [...f.tenants].sort((a, b) => compare(a.key, b.key));
  const users = [...f.users].sort((a, b) => compare(a.key, b.key));
  const assignments = [...f.role_assignments].sort((a, b) => compare(assignmentKey(a), assignmentKey(b)));
  if (tenants.length > 0) out["tenants"] = tenants.map((t) => plain({ ...t }));
  if (users.length > 0) out["users"] = users.map((u) => plain({ ...u }));
  if (assignments.length > 0) out["role_assignments"] = assignments.map((a) => plain({ ...a }));
  const tuples = [...f.relationship_tuples].sort((a, b) => compare(tupleKey(a), tupleKey(b)));
  if (tuples.length > 0) out["relationship_tuples"] = tuples.map((t) => plain({ ...t }));
  return Object.keys(out).length > 0 ? out : undefined;
}

function list(r: Reader, value: unknown, path: Path): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    r.problem(path, "must be a list");
    return [];
  }
  return value;
}

interface ReadFacts {
  facts: FactsDoc;
  where: Where;
}

/** The file's `facts:` section (undefined when it has none): a 422 naming line and field of each problem. */
export function parseFacts(text: string): ReadFacts | undefined {
  const { data, where } = readDocument(text);
  const r = new Reader(where);
  const section = r.map((r.map(data, []) ?? {})["facts"], ["facts"]);
  if (section === undefined) return undefined;
  const f = r.fields(section, ["facts"], [...SECTIONS]);
  /** A key as the facts API takes it (users' keys may be e-mail addresses). */
  const key = (v: unknown, p: Path, pattern: string) => {
    const k = r.string(v, [...p, "key"], true) ?? "";
    if (k !== "" && (!new RegExp(pattern).test(k) || k.length > 255)) {
      r.problem([...p, "key"], `must match ${pattern} (at most 255 characters)`);
    }
    return k;
  };
  const attributes = (v: unknown, p: Path) => r.json(v, [...p, "attributes"]) as Attributes | undefined;
  const facts: FactsDoc = {
    tenants: list(r, f["tenants"], ["facts", "tenants"]).map((v, i) => {
      const p = ["facts", "tenants", i];
      const t = r.fields(v, p, ["key", "name", "description", "attributes"]);
      const k = key(t["key"], p, KEY_PATTERN);
      return {
        key: k,
        name: r.string(t["name"], [...p, "name"]) ?? k,
        ...opt("description", r.string(t["description"], [...p, "description"])),
        ...opt("attributes", attributes(t["attributes"], p)),
      };
    }),
    users: list(r, f["users"], ["facts", "users"]).map((v, i) => {
      const p = ["facts", "users", i];
      const u = r.fields(v, p, ["key", "email", "first_name", "last_name", "attributes"]);
      return {
        key: key(u["key"], p, USER_KEY_PATTERN),
        ...opt("email", r.string(u["email"], [...p, "email"])),
        ...opt("first_name", r.string(u["first_name"], [...p, "first_name"])),
        ...opt("last_name", r.string(u["last_name"], [...p, "last_name"])),
        ...opt("attributes", attributes(u["attributes"], p)),
      };
    }),
    role_assignments: list(r, f["role_assignments"], ["facts", "role_assignments"]).map((v, i) => {
      const p = ["facts", "role_assignments", i];
      const a = r.fields(v, p, ["user", "role", "tenant", "resource_instance"]);
      return {
        user: r.string(a["user"], [...p, "user"], true) ?? "",
        role: r.string(a["role"], [...p, "role"], true) ?? "",
        // As in a policy test file's facts: an assignment without a tenant is in "default".
        tenant: r.string(a["tenant"], [...p, "tenant"]) ?? "default",
        ...opt("resource_instance", r.string(a["resource_instance"], [...p, "resource_instance"])),
      };
    }),
    relationship_tuples: list(r, f["relationship_tuples"], ["facts", "relationship_tuples"]).map((v, i) => {
      const p = ["facts", "relationship_tuples", i];
      const t = r.fields(v, p, ["subject", "relation", "object", "tenant"]);
      return {
        subject: r.string(t["subject"], [...p, "subject"], true) ?? "",
        relation: r.string(t["relation"], [...p, "relation"], true) ?? "",
        object: r.string(t["object"], [...p, "object"], true) ?? "",
        tenant: r.string(t["tenant"], [...p, "tenant"]) ?? "default",
      };
    }),
  };
  if (r.problems.length > 0) throw policyInvalid(r.problems);
  return { facts, where };
}

/** The environment's facts as the section holds them: assignments that expire are temporary, not seeds. */
export async function readFacts(db: Db, envId: string): Promise<FactsDoc> {
  const tenants = await db
    .selectFrom("tenants")
    .select(["key", "name", "description", "attributes"])
    .where("environment_id", "=", envId)
    .execute();
  const users = await db
    .selectFrom("users")
    .select(["key", "email", "first_name", "last_name", "attributes"])
    .where("environment_id", "=", envId)
    .execute();
  const assignments = await assignmentsJoined(db)
    .innerJoin("users as u", "u.id", "ra.user_id")
    .select([
      "u.key as user",
      "r.key as role",
      "t.key as tenant",
      "ri.key as instance",
      "res.key as resource",
    ])
    .where("ra.environment_id", "=", envId)
    .where("ra.expires_at", "is", null)
    .execute();
  const tuples = await tuplesJoined(db)
    .innerJoin("tenants as t", "t.id", "rt.tenant_id")
    .select([
      "sr.key as st",
      "s.key as sk",
      "rel.key as relation",
      "orr.key as ot",
      "o.key as ok",
      "t.key as tenant",
    ])
    .where("rt.environment_id", "=", envId)
    .execute();
  const attrs = (text: string | null) => (fromJsonObject(text) ?? undefined) as Attributes | undefined;
  const some = <T>(v: T | null) => v ?? undefined;
  return {
    tenants: tenants.map((t) => ({
      key: t.key,
      name: t.name,
      description: some(t.description),
      attributes: attrs(t.attributes),
    })) as TenantFact[],
    users: users.map((u) => ({
      key: u.key,
      email: some(u.email),
      first_name: some(u.first_name),
      last_name: some(u.last_name),
      attributes: attrs(u.attributes),
    })) as UserFact[],
    role_assignments: assignments.map((a) => ({
      user: a.user,
      role: a.role,
      tenant: a.tenant,
      resource_instance: a.instance === null ? undefined : `${a.resource}:${a.instance}`,
    })) as AssignmentFact[],
    relationship_tuples: tuples.map((t) => ({
      subject: `${t.st}:${t.sk}`,
      relation: t.relation,
      object: `${t.ot}:${t.ok}`,
      tenant: t.tenant,
    })),
  };
}

const same = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  JSON.stringify(plain(a)) === JSON.stringify(plain(b));

/**
 * Writes the section inside the caller's transaction (after the schema's changes), adding the PDP's change records
 * to `records`; answers what it created and updated. A fact naming what neither the environment nor the file
 * holds is a 422 at its path, and the caller's transaction writes nothing.
 */
export async function writeFactsDoc(
  trx: Db,
  env: EnvScope["environment"],
  { facts, where }: ReadFacts,
  records: Change[],
): Promise<PolicyChange[]> {
  const resolver = new Resolver(trx, env);
  const out: PolicyChange[] = [];
  const at = async (path: Path, write: () => Promise<void>) => {
    try {
      await write();
    } catch (e) {
      if (!(e instanceof AppError) || (e.code !== "NOT_FOUND" && e.code !== "INVALID_INPUT")) throw e;
      throw policyInvalid(
        [{ path, ...where(path), message: e.message }],
        "the policy file's facts are invalid",
      );
    }
  };
  for (const [i, t] of facts.tenants.entries()) {
    await at(["facts", "tenants", i], async () => {
      const existing = await resolver.tenant(t.key);
      if (!existing) {
        await createTenantRecords(resolver, [t as never], records);
        out.push({ op: "create", object: "tenant", key: t.key });
      } else {
        const now = {
          name: existing.name,
          description: existing.description,
          attributes: fromJsonObject(existing.attributes),
        };
        if (same(now, { name: t.name, description: t.description, attributes: t.attributes })) return;
        const patch = { ...namedPatch(t as never), description: t.description ?? null };
        const row = await updateTenant(trx, env.id, existing.id, {
          ...patch,
          attributes: patch.attributes ?? null,
        });
        resolver.remember("tenant", row.key, row);
        records.push(tenantChange(row));
        out.push({ op: "update", object: "tenant", key: t.key });
      }
    });
  }
  for (const [i, u] of facts.users.entries()) {
    const path = ["facts", "users", i];
    await at(path, async () => {
      const existing = await resolver.user(u.key);
      if (!existing) {
        await createUserRecord(resolver, u as never, records, path);
        out.push({ op: "create", object: "user", key: u.key });
        return;
      }
      const { id: _i, key: _k, attributes, ...profile } = existing;
      if (same({ ...pick(profile), attributes: fromJsonObject(attributes) }, { ...u, key: undefined }))
        return;
      await replaceUserRecord(resolver, existing, { ...u, key: undefined } as never, records, path);
      out.push({ op: "update", object: "user", key: u.key });
    });
  }
  for (const [i, a] of facts.role_assignments.entries()) {
    const path = ["facts", "role_assignments", i];
    await at(path, async () => {
      const user = await resolver.requireUser(a.user);
      const target = { role: a.role, tenant: a.tenant, ...opt("resource_instance", a.resource_instance) };
      const written = await assignRoles(resolver, user, [target], records, "skip", path);
      if (written.length > 0) out.push({ op: "create", object: "role_assignment", key: assignmentKey(a) });
    });
  }
  for (const [i, t] of facts.relationship_tuples.entries()) {
    const path = ["facts", "relationship_tuples", i];
    await at(path, async () => {
      const written = await createTupleRecords(resolver, [t], records, "skip", path);
      if (written.length > 0) out.push({ op: "create", object: "relationship_tuple", key: tupleKey(t) });
    });
  }
  return out;
}

const pick = (row: { email: string | null; first_name: string | null; last_name: string | null }) => ({
  email: row.email,
  first_name: row.first_name,
  last_name: row.last_name,
});
